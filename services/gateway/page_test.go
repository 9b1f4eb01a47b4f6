package gateway_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/gateway/gatewaytest"
)

// chromiumVar names a Chromium binary other than /usr/bin/chromium.
const chromiumVar = "PRAETOR_CHROMIUM"

// chromium returns the browser to drive, or skips the test (fails it under
// PRAETOR_REQUIRE_SERVICES=1) when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(chromiumVar); p != "" {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			t.Fatalf("%s=%s is not a Chromium binary (%v)", chromiumVar, p, err)
		}
		return p
	}
	candidates := []string{"/usr/bin/chromium"}
	if p, err := exec.LookPath("chromium"); err == nil {
		candidates = append(candidates, p)
	}
	for _, p := range candidates {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	testenv.Unavailable(t, "Chromium", chromiumVar+" to its path",
		"no /usr/bin/chromium; install it with apt-get install chromium")
	return ""
}

// page is a headless Chromium tab on the node's page, with the page's
// console errors and uncaught exceptions collected.
type page struct {
	ctx    context.Context
	mu     sync.Mutex
	errors []string
}

func openPage(t *testing.T, path, url string) *page {
	t.Helper()
	output := &strings.Builder{}
	var outputMu sync.Mutex
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(writerFunc(func(b []byte) (int, error) {
			outputMu.Lock()
			defer outputMu.Unlock()
			return output.Write(b)
		})),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	p := &page{ctx: ctx}
	console := chromedp.Console(ctx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				p.mu.Lock()
				p.errors = append(p.errors, strings.TrimSpace(m.String()+" "+m.URL))
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for the browser to exit
		<-consoleDone
		if t.Failed() {
			outputMu.Lock()
			defer outputMu.Unlock()
			var lines []string
			for _, l := range strings.Split(output.String(), "\n") {
				// No D-Bus in a container: noise, whatever failed.
				if !strings.Contains(l, "dbus") {
					lines = append(lines, l)
				}
			}
			t.Logf("chromium output:\n%s", strings.Join(lines, "\n"))
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s in chromium: %v", url, err)
	}
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// do runs steps, failing the test with the page's errors when one fails.
func (p *page) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(p.ctx, steps...); err != nil {
		t.Fatalf("%s: %v%s", what, err, p.state(t))
	}
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](t *testing.T, p *page, expr string) T {
	t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript predicate until it holds.
func (p *page) waitFor(t *testing.T, what, predicate string, timeout time.Duration) {
	t.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		t.Fatalf("waiting for %s: %v%s", what, err, p.state(t))
	}
}

// state describes the page for a failure message.
func (p *page) state(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("\npage text:\n%s\nconsole errors: %q", text, p.errors)
}

func (p *page) consoleErrors() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.errors...)
}

const (
	offlineBanner = `[data-testid="offline-banner"]`
	engineSelect  = `[data-testid="engine-select"]`
	startButton   = `[data-testid="start"]`
	messageBox    = `[data-testid="message"]`
	sendButton    = `[data-testid="send"]`
	phaseLabel    = `[data-testid="phase"]`
	progressBar   = `[data-testid="progress"]`
	errorLine     = `[data-testid="error"]`
)

// TestPage drives the page in headless Chromium as a developer would after
// make run: it sees the offline banner, starts a project-discovery session,
// chats, and watches the replies and the sidebar.
func TestPage(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; runs without -short")
	}
	browserPath := chromium(t)
	for _, tc := range []struct {
		name    string
		maxWait time.Duration
	}{
		{"replies with the post", 0},
		// The gateway stops waiting at once: every reply reaches the page
		// on the stream.
		{"replies on the stream", time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { testPage(t, browserPath, tc.maxWait) })
	}
}

func testPage(t *testing.T, browserPath string, maxWait time.Duration) {
	const limit = 2000
	n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) {
		c.MaxMessageBytes, c.MaxWait = limit, maxWait
	}})
	began := time.Now()
	p := openPage(t, browserPath, n.URL+"/")

	p.do(t, "see the offline banner and the engines",
		chromedp.WaitVisible(chromedp.CSS(offlineBanner)),
		chromedp.WaitEnabled(chromedp.CSS(startButton)))
	if banner := eval[string](t, p, `document.querySelector('`+offlineBanner+`').innerText`); !strings.Contains(banner, "offline") {
		t.Errorf("the offline banner says %q", banner)
	}
	if provider := eval[string](t, p, `document.querySelector('[data-testid="provider"]').innerText`); !strings.Contains(provider, "offline") {
		t.Errorf("the provider badge says %q", provider)
	}
	options := eval[[]string](t, p, `[...document.querySelectorAll('`+engineSelect+` option')].map(o => o.value)`)
	if !slices.Contains(options, "project-discovery") {
		t.Fatalf("the engine list offers %v, want project-discovery", options)
	}

	p.do(t, "start a project-discovery session",
		chromedp.SetValue(chromedp.CSS(engineSelect), "project-discovery"),
		chromedp.Click(chromedp.CSS(startButton)),
		chromedp.WaitEnabled(chromedp.CSS(messageBox)))
	sessionID := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.sessionId || ""`)
	if sessionID == "" {
		t.Fatalf("no session on the page%s", p.state(t))
	}
	if engine := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.engine`); engine != "project-discovery" {
		t.Fatalf("the page started %q, want project-discovery", engine)
	}
	if got := eval[string](t, p, `document.querySelector('`+phaseLabel+`').innerText`); !strings.Contains(got, "Phase 1/") {
		t.Errorf("before any message the phase indicator says %q, want Phase 1/...", got)
	}

	messages := []string{
		"We want to build a scheduling app for dental clinics so patients can book appointments online.",
		"It is a web app. Our receptionists currently use a paper book and phone calls.",
		"About 40 receptionists and a few thousand patients will use it.",
	}
	for i, msg := range messages {
		send := []chromedp.Action[chromedp.Void]{chromedp.SendKeys(chromedp.CSS(messageBox), msg),
			chromedp.Click(chromedp.CSS(sendButton))}
		if i == len(messages)-1 {
			// The last one as people mostly send: with Enter.
			send = []chromedp.Action[chromedp.Void]{chromedp.SendKeys(chromedp.CSS(messageBox), msg+kb.Enter)}
		}
		p.do(t, fmt.Sprintf("send message %d", i+1), send...)
		p.waitFor(t, fmt.Sprintf("reply %d", i+1),
			fmt.Sprintf(`document.querySelectorAll('[data-testid="reply"]').length === %d && !document.querySelector('[data-testid="pending"]')`, i+1),
			45*time.Second)
	}

	// The page shows the replies the API recorded, in order, after each
	// message sent.
	shown := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].map(li => li.innerText)`)
	asked := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="user"]')].map(li => li.innerText)`)
	recorded := turns(t, n, "", sessionID)
	if len(recorded) != len(messages) || len(shown) != len(messages) || len(asked) != len(messages) {
		t.Fatalf("%d turns recorded, %d replies and %d messages shown; want %d each%s",
			len(recorded), len(shown), len(asked), len(messages), p.state(t))
	}
	for i, turn := range recorded {
		if turn.Message != messages[i] || asked[i] != messages[i] {
			t.Errorf("message %d: recorded %q, shown %q, want %q", i+1, turn.Message, asked[i], messages[i])
		}
		if strings.TrimSpace(shown[i]) != turn.Reply || turn.Reply == "" {
			t.Errorf("reply %d: the page shows %q, the API recorded %q", i+1, shown[i], turn.Reply)
		}
	}
	order := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="log"] li')].map(li => li.dataset.testid)`)
	if want := []string{"system", "user", "reply", "user", "reply", "user", "reply"}; !slices.Equal(order, want) {
		t.Errorf("the chat lines are %v, want %v", order, want)
	}

	// The sidebar follows the session.
	var state session
	n.Get(t, "/v1/sessions/"+sessionID, "").Decode(t, &state)
	phaseText := eval[string](t, p, `document.querySelector('`+phaseLabel+`').innerText`)
	phaseID := eval[string](t, p, `document.querySelector('`+phaseLabel+`').dataset.phase`)
	if phaseID != state.Phase || state.Sidebar.PhaseIndicator == nil || !strings.Contains(phaseText, state.Sidebar.PhaseIndicator.Label) {
		t.Errorf("the phase indicator says %q (%s); the session is in %s", phaseText, phaseID, state.Phase)
	}
	pct, err := strconv.ParseFloat(eval[string](t, p, `document.querySelector('`+progressBar+`').dataset.percentage || "0"`), 64)
	if err != nil || pct <= 0 || state.Sidebar.ProgressBar == nil || pct != state.Sidebar.ProgressBar.Percentage {
		t.Errorf("the progress bar shows %v%% (%v); the session's sidebar says %+v", pct, err, state.Sidebar.ProgressBar)
	}
	if hidden := eval[bool](t, p, `document.querySelector('`+progressBar+`').hidden`); hidden {
		t.Error("the progress bar is hidden")
	}
	if label := eval[string](t, p, `document.querySelector('[data-testid="progress-pct"]').innerText`); label != fmt.Sprintf("%v%%", pct) {
		t.Errorf("the progress label says %q, want %v%%", label, pct)
	}
	met := eval[[]string](t, p,
		`[...document.querySelectorAll('[data-testid="obligation"]')].filter(li => li.dataset.status === "partial" || li.dataset.status === "satisfied").map(li => li.dataset.obligation)`)
	if len(met) == 0 {
		t.Errorf("no obligation shows partial or satisfied%s", p.state(t))
	}
	for _, id := range met {
		found := false
		for _, o := range state.Obligations {
			found = found || (o.ID == id && (o.Status == "partial" || o.Status == "satisfied"))
		}
		if !found {
			t.Errorf("the page shows obligation %s met; the session does not", id)
		}
	}

	// A refused message is given back to the user with the reason.
	long := strings.Repeat("x", limit+1)
	p.do(t, "send a message over the limit",
		chromedp.SetValue(chromedp.CSS(messageBox), long),
		chromedp.Click(chromedp.CSS(sendButton)),
		chromedp.WaitVisible(chromedp.CSS(errorLine)))
	if msg := eval[string](t, p, `document.querySelector('`+errorLine+`').innerText`); !strings.Contains(msg, strconv.Itoa(limit)) {
		t.Errorf("the error says %q, want the limit %d", msg, limit)
	}
	if kept := eval[string](t, p, `document.querySelector('`+messageBox+`').value`); kept != long {
		t.Errorf("the refused message was not given back: the box holds %d characters", len(kept))
	}
	if lines := eval[int](t, p, `document.querySelectorAll('[data-testid="log"] li').length`); lines != 1+2*len(messages) {
		t.Errorf("the refused message left lines in the chat: %d lines", lines)
	}
	if errs := p.consoleErrors(); len(errs) > 0 {
		// The 413 shows as a failed resource load; nothing else may fail.
		for _, e := range errs {
			if !strings.Contains(e, "413") {
				t.Errorf("console error: %s", e)
			}
		}
	}
	t.Logf("the page test took %s in the browser (%d messages)", time.Since(began).Round(time.Millisecond), len(messages))
}

// TestPageFollowsAHandoff drives the page through an exploration that ends
// in a decision: the page shows the switch to project discovery, follows
// the new session, lists the background research, and the next message
// goes to the new engine, whose first reply picks up the handoff.
func TestPageFollowsAHandoff(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; runs without -short")
	}
	browserPath := chromium(t)
	n := gatewaytest.Start(t, gatewaytest.Options{})
	p := openPage(t, browserPath, n.URL+"/")
	p.do(t, "start an exploration session",
		chromedp.WaitEnabled(chromedp.CSS(startButton)),
		chromedp.SetValue(chromedp.CSS(engineSelect), "exploration"),
		chromedp.Click(chromedp.CSS(startButton)),
		chromedp.WaitEnabled(chromedp.CSS(messageBox)))
	source := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.sessionId`)
	for i, msg := range explorationScript {
		p.do(t, fmt.Sprintf("send message %d", i+1), chromedp.SendKeys(chromedp.CSS(messageBox), msg+kb.Enter))
		if i < len(explorationScript)-1 {
			p.waitFor(t, fmt.Sprintf("reply %d", i+1),
				fmt.Sprintf(`document.querySelectorAll('[data-testid="reply"]').length === %d && !document.querySelector('[data-testid="pending"]')`, i+1),
				45*time.Second)
		}
		if i == len(explorationScript)-2 {
			// The background research ran meanwhile; the page lists it.
			p.waitFor(t, "the background research on the page",
				`[...document.querySelectorAll('[data-testid="task"]')].some(li => li.dataset.task === "landscape_research" && li.dataset.status === "completed")`,
				30*time.Second)
		}
	}
	// The decision hands off: the page follows the new session.
	p.waitFor(t, "the switch to project discovery",
		`document.querySelector('[data-testid="session"]').dataset.engine === "project-discovery" && !document.querySelector('`+messageBox+`').disabled`,
		45*time.Second)
	target := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.sessionId`)
	var src handoffSession
	n.Get(t, "/v1/sessions/"+source, "").Decode(t, &src)
	if src.OutboundHandoff == nil || target != src.OutboundHandoff.TargetSessionID {
		t.Fatalf("the page follows %s; the handoff started %+v", target, src.OutboundHandoff)
	}
	system := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="system"]')].map(li => li.innerText)`)
	if !slices.ContainsFunc(system, func(s string) bool { return strings.Contains(s, "Handed off to project-discovery") }) {
		t.Errorf("the page does not show the switch; system lines: %q", system)
	}
	if last := eval[string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].pop().innerText`); !strings.Contains(last, "handing you over") {
		t.Errorf("the last reply of the exploration does not say it hands over: %q", last)
	}
	// The next message goes to the new engine, which picks the handoff up.
	replies := eval[int](t, p, `document.querySelectorAll('[data-testid="reply"]').length`)
	p.do(t, "send to the new session", chromedp.SendKeys(chromedp.CSS(messageBox), "Yes, let's define the requirements."+kb.Enter))
	p.waitFor(t, "the new engine's first reply",
		fmt.Sprintf(`document.querySelectorAll('[data-testid="reply"]').length === %d && !document.querySelector('[data-testid="pending"]')`, replies+1),
		45*time.Second)
	if first := eval[string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].pop().innerText`); !strings.Contains(first, "Picking up from") {
		t.Errorf("the new engine's first reply does not acknowledge the handoff: %q", first)
	}
	turns := turns(t, n, "", target)
	if len(turns) != 1 || turns[0].Message != "Yes, let's define the requirements." {
		t.Errorf("the target session's turns = %+v", turns)
	}
	if errs := p.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}
