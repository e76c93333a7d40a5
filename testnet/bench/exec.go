package bench

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/up-pool/up/apps"
	"github.com/up-pool/up/runner"
)

// inProcess is the bench's client.Executor: it runs the bench's built-in
// application in this process, called directly, with no child process
// and no limits (the zero-work job cannot exceed them).
type inProcess struct{}

// Allowed allows the bench project's application only, as the clients'
// runners allow it in subprocess mode.
func (inProcess) Allowed(project, app string) bool { return project == benchProject && app == App }

// AllowedWASM allows no project's WebAssembly modules: the bench's jobs
// are its built-in's.
func (inProcess) AllowedWASM(string) bool { return false }

// Run calls the application's entry point; a failing application is an
// outcome with exit code 1, as its child process would be.
func (e inProcess) Run(ctx context.Context, t runner.Task) (runner.Outcome, error) {
	if !e.Allowed(t.Project, t.App) {
		return runner.Outcome{}, fmt.Errorf("bench: project %q, application %q: %w", t.Project, t.App, runner.ErrNotAllowed)
	}
	if err := ctx.Err(); err != nil {
		return runner.Outcome{}, err
	}
	app, ok := apps.Lookup(t.App)
	if !ok {
		return runner.Outcome{}, fmt.Errorf("bench: no built-in %q", t.App)
	}
	start := time.Now()
	var out bytes.Buffer
	o := runner.Outcome{}
	if err := app.Main(t.Args, &out, ""); err != nil {
		o.ExitCode, o.Stderr = 1, err.Error()
	}
	o.Output, o.Wall = out.Bytes(), time.Since(start)
	return o, nil
}

// warnings is a slog handler that hands the client's warnings (a job
// cycle that failed, a job released) to the bench as errors.
type warnings struct {
	add   func(error)
	attrs []slog.Attr
}

func (w warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w warnings) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	add := func(a slog.Attr) bool {
		msg += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range w.attrs {
		add(a)
	}
	r.Attrs(add)
	w.add(fmt.Errorf("%s", msg))
	return nil
}

func (w warnings) WithAttrs(as []slog.Attr) slog.Handler {
	return warnings{add: w.add, attrs: append(append([]slog.Attr(nil), w.attrs...), as...)}
}

func (w warnings) WithGroup(string) slog.Handler { return w }
