// Package browser owns driving a headless Chromium against the daemons'
// pages in tests: finding the browser (UP_CHROMIUM or chromium on PATH),
// starting it headless, opening pages, awaiting what they show by polling
// the DOM, clicking, reading text, collecting the pages' console errors and
// taking screenshots (to UP_SCREENSHOTS when set). A test without a
// browser skips, unless UP_BROWSER_REQUIRED=1 (CI) makes it fail.
package browser

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ActionTimeout bounds one action (open, click, read): 30 s.
const ActionTimeout = 30 * time.Second

// pollInterval is how often WaitText reads the DOM again: 50 ms.
const pollInterval = 50 * time.Millisecond

// Browser is a headless Chromium with one tab, closed at the test's end.
type Browser struct {
	t   testing.TB
	ctx context.Context // the tab's

	mu     sync.Mutex
	errors []string // console errors and uncaught exceptions, in order
	ended  bool     // the test is over
}

// logf logs chromedp's errors to the test while it runs.
func (b *Browser) logf(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ended {
		b.t.Logf("chromedp: "+format, args...)
	}
}

// ExecPath is the Chromium to run: UP_CHROMIUM, else chromium,
// chromium-browser or google-chrome on PATH; empty when none is found.
func ExecPath() string {
	if p := os.Getenv("UP_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Required reports whether a missing browser fails the test
// (UP_BROWSER_REQUIRED=1) instead of skipping it.
func Required() bool {
	ok, _ := strconv.ParseBool(os.Getenv("UP_BROWSER_REQUIRED"))
	return ok
}

// Start starts a headless Chromium for t (without sandbox: CI runs as
// root) and stops it when t ends. Without a browser it skips t, or fails
// it when Required.
func Start(t testing.TB) *Browser {
	t.Helper()
	path := ExecPath()
	if path == "" {
		if Required() {
			t.Fatal("no Chromium (UP_CHROMIUM, or chromium on PATH) and UP_BROWSER_REQUIRED is set")
		}
		t.Skip("no Chromium: set UP_CHROMIUM or install chromium")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	b := &Browser{t: t}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(b.logf))
	b.ctx = ctx
	t.Cleanup(func() {
		cancel()
		acancel()
		b.mu.Lock()
		b.ended = true // chromedp may still log: t must not hear of it
		b.mu.Unlock()
	})
	// The first run starts the browser: no timeout on it, which would
	// stop the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium %s: %v", path, err)
	}
	go b.collectConsole()
	return b
}

// collectConsole keeps the tab's console errors and uncaught exceptions
// until the tab closes.
func (b *Browser) collectConsole() {
	for m, err := range chromedp.Console(b.ctx) {
		if err != nil {
			return
		}
		// The browser asks every server for a favicon on its own.
		if strings.HasSuffix(m.URL, "/favicon.ico") {
			continue
		}
		if m.Type == chromedp.ConsoleError || m.IsException() {
			b.mu.Lock()
			b.errors = append(b.errors, m.String())
			b.mu.Unlock()
		}
	}
}

// Errors are the console errors (failed loads included, but for the
// favicon) and uncaught exceptions of the pages opened so far, in order.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errors...)
}

// action is a context for one action, bounded by ActionTimeout.
func (b *Browser) action() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, ActionTimeout)
}

// Open navigates the tab to url and waits for it to load.
func (b *Browser) Open(url string) {
	b.t.Helper()
	ctx, cancel := b.action()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("open %s: %v", url, err)
	}
}

// text is the innerText of the first element selector matches; false when
// none does.
func (b *Browser) text(ctx context.Context, selector string) (string, bool, error) {
	s, err := chromedp.Run(ctx, chromedp.Evaluate[*string](
		fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : null })()`, selector)))
	if err != nil || s == nil {
		return "", false, err
	}
	return *s, true, nil
}

// Text is the innerText of the first element selector (CSS) matches; it
// fails the test when none does.
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	ctx, cancel := b.action()
	defer cancel()
	s, ok, err := b.text(ctx, selector)
	if err != nil {
		b.t.Fatalf("read %s: %v", selector, err)
	}
	if !ok {
		b.t.Fatalf("no element matches %s", selector)
	}
	return s
}

// WaitText reads the innerText of the first element selector matches
// until ok accepts it, within timeout, and returns it; it fails the test
// with the last text read when the time runs out.
func (b *Browser) WaitText(selector string, ok func(string) bool, timeout time.Duration) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last, found := "", false
	for {
		s, f, err := b.text(ctx, selector)
		if err == nil {
			last, found = s, f
			if f && ok(s) {
				return s
			}
		}
		select {
		case <-ctx.Done():
			if !found {
				b.t.Fatalf("no element matches %s after %v (%v)", selector, timeout, err)
			}
			b.t.Fatalf("%s still reads %q after %v", selector, last, timeout)
		case <-tick.C:
		}
	}
}

// Count is how many elements selector (CSS) matches now.
func (b *Browser) Count(selector string) int {
	b.t.Helper()
	ctx, cancel := b.action()
	defer cancel()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)))
	if err != nil {
		b.t.Fatalf("count %s: %v", selector, err)
	}
	return n
}

// WaitCount waits until selector matches at least min elements, within
// timeout, and returns how many it matches.
func (b *Browser) WaitCount(selector string, min int, timeout time.Duration) int {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	js := fmt.Sprintf(`document.querySelectorAll(%q).length`, selector)
	n := 0
	for {
		if got, err := chromedp.Run(ctx, chromedp.Evaluate[int](js)); err == nil {
			if n = got; n >= min {
				return n
			}
		}
		select {
		case <-ctx.Done():
			b.t.Fatalf("%s matches %d elements after %v, want at least %d", selector, n, timeout, min)
		case <-tick.C:
		}
	}
}

// WaitMatch is WaitText until re matches the text.
func (b *Browser) WaitMatch(selector string, re *regexp.Regexp, timeout time.Duration) string {
	b.t.Helper()
	return b.WaitText(selector, re.MatchString, timeout)
}

// Click clicks the first element selector matches, once it is visible.
func (b *Browser) Click(selector string) {
	b.t.Helper()
	ctx, cancel := b.action()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
		b.t.Fatalf("click %s: %v", selector, err)
	}
}

// SetValue sets the value of the first input selector matches, as if
// typed.
func (b *Browser) SetValue(selector, value string) {
	b.t.Helper()
	ctx, cancel := b.action()
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(selector), value)); err != nil {
		b.t.Fatalf("set %s: %v", selector, err)
	}
}

// Screenshot writes a PNG of the whole page to path.
func (b *Browser) Screenshot(path string) {
	b.t.Helper()
	ctx, cancel := b.action()
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
}

// Snapshot takes a screenshot named name (".png" added) into the
// directory UP_SCREENSHOTS names, and returns its path; without
// UP_SCREENSHOTS it takes none and returns "".
func (b *Browser) Snapshot(name string) string {
	b.t.Helper()
	dir := os.Getenv("UP_SCREENSHOTS")
	if dir == "" {
		return ""
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatalf("screenshot directory: %v", err)
	}
	path := filepath.Join(dir, name+".png")
	b.Screenshot(path)
	return path
}
