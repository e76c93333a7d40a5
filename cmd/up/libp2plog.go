package main

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/libp2p/go-libp2p/gologshim"
)

// libp2pLogger is where go-libp2p's own logs go: the running command's
// logger, or, before one is set, a text logger on stderr.
var libp2pLogger atomic.Pointer[slog.Logger]

// init routes go-libp2p's logs (its gologshim loggers) through
// libp2pHandler, unless GOLOG_LOG_LEVEL asks for libp2p's own logging.
// It must run before libp2p logs anything: each of its loggers fixes its
// handler on first use.
func init() {
	if os.Getenv("GOLOG_LOG_LEVEL") != "" {
		return
	}
	gologshim.SetDefaultHandler(libp2pHandler{})
}

// setLibp2pLogger sends go-libp2p's logs to l from now on.
func setLibp2pLogger(l *slog.Logger) { libp2pLogger.Store(l) }

// libp2pHandler passes go-libp2p's errors, libp2p's default threshold, to
// the command's logger, in its format. It drops the fx dependency
// injector's logs: a host that fails to start (a port in use) has fx log
// the failure several times over, and libp2p.New returns the same error,
// which the command prints as its one line.
type libp2pHandler struct {
	ops []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

func (h libp2pHandler) target() slog.Handler {
	l := libp2pLogger.Load()
	if l == nil {
		l = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	out := l.Handler()
	for _, op := range h.ops {
		out = op(out)
	}
	return out
}

// Enabled implements slog.Handler.
func (h libp2pHandler) Enabled(ctx context.Context, lv slog.Level) bool {
	return lv >= slog.LevelError && h.target().Enabled(ctx, lv)
}

// Handle implements slog.Handler.
func (h libp2pHandler) Handle(ctx context.Context, r slog.Record) error {
	return h.target().Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h libp2pHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		if a.Key == "system" && a.Value.String() == "fx" {
			return slog.DiscardHandler
		}
	}
	return libp2pHandler{ops: append(h.ops[:len(h.ops):len(h.ops)], func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })}
}

// WithGroup implements slog.Handler.
func (h libp2pHandler) WithGroup(name string) slog.Handler {
	return libp2pHandler{ops: append(h.ops[:len(h.ops):len(h.ops)], func(t slog.Handler) slog.Handler { return t.WithGroup(name) })}
}
