package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/praetorhq/praetor/internal/store"
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
	t.Cleanup(func() {
		cancelAlloc() // waits for the browser to exit
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
	return openTab(t, actx, url)
}

// openTab opens url in a new tab of the browser of ctx (an allocator's, or
// another tab's).
func openTab(t *testing.T, browser context.Context, url string) *page {
	t.Helper()
	ctx, cancelTab := chromedp.NewContext(browser)
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
		<-consoleDone
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

	// The next action clears the error, even a send of nothing.
	p.do(t, "send only spaces",
		chromedp.SetValue(chromedp.CSS(messageBox), "   "),
		chromedp.Click(chromedp.CSS(sendButton)))
	p.waitFor(t, "the error cleared", `document.querySelector('`+errorLine+`').hidden`, 10*time.Second)

	// With the server gone, the page says so and keeps the message.
	n.Stop(t)
	const unsent = "Are you still there?"
	p.do(t, "send with the server stopped",
		chromedp.SetValue(chromedp.CSS(messageBox), unsent),
		chromedp.Click(chromedp.CSS(sendButton)),
		chromedp.WaitVisible(chromedp.CSS(errorLine)))
	msg := eval[string](t, p, `document.querySelector('`+errorLine+`').innerText`)
	for _, want := range []string{"Cannot reach the Praetor server", "kept", "send it again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("with the server stopped the error says %q, want %q in it", msg, want)
		}
	}
	if kept := eval[string](t, p, `document.querySelector('`+messageBox+`').value`); kept != unsent {
		t.Errorf("with the server stopped the box holds %q, want the message %q", kept, unsent)
	}
	if lines := eval[int](t, p, `document.querySelectorAll('[data-testid="log"] li').length`); lines != 1+2*len(messages) {
		t.Errorf("the unsent message left lines in the chat: %d lines", lines)
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
			// Once: the engine's sidebar has a section of them.
			titles := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="sidebar"] h3')].map(h => h.innerText)`)
			if got := countOf(titles, "Background research"); got != 1 {
				t.Errorf("the sidebar has %d \"Background research\" sections, want 1: %q", got, titles)
			}
			if got := eval[int](t, p, `document.querySelectorAll('[data-testid="task"][data-task="landscape_research"]').length`); got != 1 {
				t.Errorf("the sidebar lists landscape_research %d times, want once", got)
			}
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

	// A reload shows the whole conversation, the handoff and the session
	// it goes on in; so does the address of the first session.
	users := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="user"]')].map(li => li.innerText)`)
	shown := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].map(li => li.innerText)`)
	for _, url := range []string{"", n.URL + "/?session=" + source} {
		what := "reload"
		step := chromedp.Reload()
		if url != "" {
			what, step = "open the exploration's address", chromedp.Navigate(url)
		}
		p.do(t, what, step)
		p.waitFor(t, what+": the conversation back",
			fmt.Sprintf(`document.querySelector('[data-testid="session"]').dataset.sessionId === %q && document.querySelectorAll('[data-testid="reply"]').length === %d && !document.querySelector('`+messageBox+`').disabled`,
				target, len(shown)),
			45*time.Second)
		if got := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="user"]')].map(li => li.innerText)`); !slices.Equal(got, users) {
			t.Errorf("%s: the messages are %q, want %q", what, got, users)
		}
		if got := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].map(li => li.innerText)`); !slices.Equal(got, shown) {
			t.Errorf("%s: the replies are %q, want %q", what, got, shown)
		}
		system := eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="system"]')].map(li => li.innerText)`)
		if !slices.ContainsFunc(system, func(s string) bool { return strings.Contains(s, "Handed off to project-discovery") }) {
			t.Errorf("%s: the page does not show the handoff; system lines: %q", what, system)
		}
		if got := eval[string](t, p, `location.search`); got != "?session="+target {
			t.Errorf("%s: the address says %q, want ?session=%s", what, got, target)
		}
	}
	if errs := p.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// chat is what a tab's chat shows: its messages, its replies and the turns
// the replies answer.
type chat struct {
	users, replies, turns []string
}

func chatOf(t *testing.T, p *page) chat {
	t.Helper()
	return chat{
		users:   eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="user"]')].map(li => li.innerText)`),
		replies: eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].map(li => li.innerText)`),
		turns:   eval[[]string](t, p, `[...document.querySelectorAll('[data-testid="reply"]')].map(li => li.dataset.turn || "")`),
	}
}

// checkChat fails the test unless the tab shows the session's turns, in
// order, each once.
func checkChat(t *testing.T, p *page, what string, recorded []turnRow) {
	t.Helper()
	got := chatOf(t, p)
	var want chat
	for _, r := range recorded {
		want.users, want.replies, want.turns = append(want.users, r.Message), append(want.replies, r.Reply), append(want.turns, r.TurnID)
	}
	if !slices.Equal(got.users, want.users) || !slices.Equal(got.replies, want.replies) || !slices.Equal(got.turns, want.turns) {
		t.Errorf("%s shows\n messages %q\n replies %q (turns %q)\nthe session has\n messages %q\n replies %q (turns %q)%s",
			what, got.users, got.replies, got.turns, want.users, want.replies, want.turns, p.state(t))
	}
}

// repliesShown is a predicate: the tab shows n replies, waits for none, and
// has the message of each (a reply to another tab's message comes first,
// and its message after it, read from the API).
func repliesShown(n int) string {
	return fmt.Sprintf(`document.querySelectorAll('[data-testid="reply"]').length === %d && !document.querySelector('[data-testid="pending"]') &&
		![...document.querySelectorAll('[data-testid="user"]')].some(li => li.innerText === "…")`, n)
}

// TestPageRestoresASession reloads the page in the middle of a
// conversation: the address names the session, and the page shows its
// engine, its turns and its sidebar, then goes on with the stream, showing
// nothing twice. An address naming no session of the tenant says so.
func TestPageRestoresASession(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; runs without -short")
	}
	browserPath := chromium(t)
	n := gatewaytest.Start(t, gatewaytest.Options{})
	p := openPage(t, browserPath, n.URL+"/")
	p.do(t, "start a project-discovery session",
		chromedp.WaitEnabled(chromedp.CSS(startButton)),
		chromedp.SetValue(chromedp.CSS(engineSelect), "project-discovery"),
		chromedp.Click(chromedp.CSS(startButton)),
		chromedp.WaitEnabled(chromedp.CSS(messageBox)))
	sessionID := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.sessionId`)
	if got := eval[string](t, p, `location.search`); got != "?session="+sessionID {
		t.Errorf("the address says %q, want ?session=%s", got, sessionID)
	}
	messages := []string{
		"We want to build a scheduling app for dental clinics so patients can book appointments online.",
		"It is a web app. Our receptionists currently use a paper book and phone calls.",
		"About 40 receptionists and a few thousand patients will use it.",
	}
	for i, msg := range messages {
		p.do(t, fmt.Sprintf("send message %d", i+1), chromedp.SendKeys(chromedp.CSS(messageBox), msg+kb.Enter))
		p.waitFor(t, fmt.Sprintf("reply %d", i+1), repliesShown(i+1), 45*time.Second)
	}

	p.do(t, "reload the page", chromedp.Reload())
	p.waitFor(t, "the conversation back", repliesShown(len(messages))+` && !document.querySelector('`+messageBox+`').disabled`, 45*time.Second)
	if got := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.sessionId`); got != sessionID {
		t.Fatalf("after a reload the page has session %q, want %s", got, sessionID)
	}
	if got := eval[string](t, p, `document.querySelector('`+engineSelect+`').value`); got != "project-discovery" {
		t.Errorf("after a reload the engine is %q, want project-discovery", got)
	}
	checkChat(t, p, "after a reload the page", turns(t, n, "", sessionID))
	var state session
	n.Get(t, "/v1/sessions/"+sessionID, "").Decode(t, &state)
	if got := eval[string](t, p, `document.querySelector('`+phaseLabel+`').dataset.phase`); got != state.Phase {
		t.Errorf("after a reload the phase is %q, want %q", got, state.Phase)
	}
	pct := eval[string](t, p, `document.querySelector('`+progressBar+`').dataset.percentage || ""`)
	if state.Sidebar.ProgressBar == nil || pct != fmt.Sprint(state.Sidebar.ProgressBar.Percentage) {
		t.Errorf("after a reload the progress bar shows %q; the session's sidebar says %+v", pct, state.Sidebar.ProgressBar)
	}
	met := eval[int](t, p, `[...document.querySelectorAll('[data-testid="obligation"]')].filter(li => li.dataset.status === "partial" || li.dataset.status === "satisfied").length`)
	if met == 0 {
		t.Errorf("after a reload no obligation shows partial or satisfied%s", p.state(t))
	}

	// The conversation goes on, each reply once.
	p.do(t, "send after the reload", chromedp.SendKeys(chromedp.CSS(messageBox), "It must also send reminders by text message."+kb.Enter))
	p.waitFor(t, "the reply after the reload", repliesShown(len(messages)+1), 45*time.Second)
	checkChat(t, p, "after a reload and a message the page", turns(t, n, "", sessionID))
	if errs := p.consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors: %q", errs)
	}

	// A session the page cannot show: said, and the page starts clean.
	foreign := n.CreateSession(t, n.Tenant(t, "globex"), "project-discovery")
	for _, id := range []string{"no-such-session", foreign} {
		p.do(t, "open session "+id, chromedp.Navigate(n.URL+"/?session="+id), chromedp.WaitVisible(chromedp.CSS(errorLine)))
		if msg := eval[string](t, p, `document.querySelector('`+errorLine+`').innerText`); !strings.Contains(msg, "no session "+id) || !strings.Contains(msg, "start a new one") {
			t.Errorf("opening session %s the error says %q", id, msg)
		}
		if got := eval[string](t, p, `location.search`); got != "" {
			t.Errorf("opening session %s the address keeps %q", id, got)
		}
		if got := eval[string](t, p, `document.querySelector('[data-testid="session"]').innerText`); !strings.Contains(got, "start a session") {
			t.Errorf("opening session %s the page says %q", id, got)
		}
		if n := eval[int](t, p, `document.querySelectorAll('[data-testid="log"] li').length`); n != 0 {
			t.Errorf("opening session %s the chat has %d lines", id, n)
		}
		p.do(t, "start clean after session "+id, chromedp.WaitEnabled(chromedp.CSS(startButton)))
	}
}

// TestPageStreamEndsWithItsToken opens the page with a token, as a proxy in
// front of it that adds the Authorization header would, and revokes the
// token: the gateway ends the stream with an "error" event, which the page
// shows, and the page closes the stream instead of reconnecting with a token
// that cannot come back.
func TestPageStreamEndsWithItsToken(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; runs without -short")
	}
	browserPath := chromium(t)
	n := gatewaytest.Start(t, gatewaytest.Options{Gateway: func(c *gateway.Config) {
		c.StreamAuthInterval = 100 * time.Millisecond
	}})
	ctx := context.Background()
	n.Tenant(t, "acme")
	token, tok, err := store.CreateToken(ctx, n.DB, "acme", "page", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := openPage(t, browserPath, "about:blank")
	if _, err := chromedp.Call(p.ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("enable the network domain: %v", err)
	}
	if _, err := chromedp.Call(p.ctx, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + token}}); err != nil {
		t.Fatalf("send the token with every request: %v", err)
	}
	p.do(t, "start a project-discovery session with the token",
		chromedp.Navigate(n.URL+"/"),
		chromedp.WaitEnabled(chromedp.CSS(startButton)),
		chromedp.SetValue(chromedp.CSS(engineSelect), "project-discovery"),
		chromedp.Click(chromedp.CSS(startButton)),
		chromedp.WaitEnabled(chromedp.CSS(messageBox)))
	sessionID := eval[string](t, p, `document.querySelector('[data-testid="session"]').dataset.sessionId`)
	if res := n.Get(t, "/v1/sessions/"+sessionID, token); res.Status != http.StatusOK {
		t.Fatalf("the page's session %s is not acme's: GET with acme's token answered %d", sessionID, res.Status)
	}
	p.waitFor(t, "the stream open", `stream.readyState === EventSource.OPEN`, 30*time.Second)

	if err := store.RevokeToken(ctx, n.DB, "acme", tok.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	p.waitFor(t, "the stream's error on the page",
		`!document.querySelector('`+errorLine+`').hidden && document.querySelector('`+errorLine+`').innerText.includes("revoked")`, 30*time.Second)
	if msg := eval[string](t, p, `document.querySelector('`+errorLine+`').innerText`); !strings.Contains(msg, "the token was revoked") {
		t.Errorf("after the revocation the error says %q, want the stream's error", msg)
	}
	if state := eval[int](t, p, `stream.readyState`); state != 2 {
		t.Errorf("after the stream's authentication error its EventSource is in state %d, want 2 (closed: no reconnection)", state)
	}
}

// TestPageTwoTabs chats in one session from two tabs: each shows every
// turn, its message and its reply, in the session's order.
func TestPageTwoTabs(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; runs without -short")
	}
	browserPath := chromium(t)
	n := gatewaytest.Start(t, gatewaytest.Options{})
	a := openPage(t, browserPath, n.URL+"/")
	a.do(t, "start a project-discovery session",
		chromedp.WaitEnabled(chromedp.CSS(startButton)),
		chromedp.SetValue(chromedp.CSS(engineSelect), "project-discovery"),
		chromedp.Click(chromedp.CSS(startButton)),
		chromedp.WaitEnabled(chromedp.CSS(messageBox)))
	sessionID := eval[string](t, a, `document.querySelector('[data-testid="session"]').dataset.sessionId`)
	b := openTab(t, a.ctx, n.URL+"/?session="+sessionID)
	b.do(t, "open the session in a second tab", chromedp.WaitEnabled(chromedp.CSS(messageBox)))

	// Both tabs post before either has its reply (most often): each reply
	// must go to its own message.
	a.do(t, "send from the first tab", chromedp.SendKeys(chromedp.CSS(messageBox),
		"We want to build a scheduling app for dental clinics so patients can book appointments online."+kb.Enter))
	b.do(t, "send from the second tab", chromedp.SendKeys(chromedp.CSS(messageBox),
		"It is a web app. Our receptionists currently use a paper book and phone calls."+kb.Enter))
	for _, p := range []*page{a, b} {
		p.waitFor(t, "both replies", repliesShown(2), 45*time.Second)
	}
	recorded := turns(t, n, "", sessionID)
	if len(recorded) != 2 {
		t.Fatalf("the session has %d turns, want 2", len(recorded))
	}
	checkChat(t, a, "the first tab", recorded)
	checkChat(t, b, "the second tab", recorded)

	b.do(t, "send again from the second tab", chromedp.SendKeys(chromedp.CSS(messageBox),
		"About 40 receptionists and a few thousand patients will use it."+kb.Enter))
	for _, p := range []*page{a, b} {
		p.waitFor(t, "the third reply", repliesShown(3), 45*time.Second)
	}
	recorded = turns(t, n, "", sessionID)
	checkChat(t, a, "the first tab", recorded)
	checkChat(t, b, "the second tab", recorded)
	for _, p := range []*page{a, b} {
		if errs := p.consoleErrors(); len(errs) > 0 {
			t.Errorf("console errors: %q", errs)
		}
	}
}

// TestPageOnAPhone lays the page out on a 390x844 screen: nothing goes off
// to the side, the header's fields and the chat fit.
func TestPageOnAPhone(t *testing.T) {
	if testing.Short() {
		t.Skip("drives Chromium; runs without -short")
	}
	browserPath := chromium(t)
	n := gatewaytest.Start(t, gatewaytest.Options{})
	p := openPage(t, browserPath, n.URL+"/")
	p.do(t, "take a phone's screen", chromedp.EmulateViewport(390, 844), chromedp.WaitEnabled(chromedp.CSS(startButton)))
	fits := func(what string) {
		t.Helper()
		if w := eval[[]int](t, p, `[document.documentElement.scrollWidth, window.innerWidth]`); w[1] != 390 || w[0] > w[1] {
			t.Errorf("%s: the page is %d wide in a window of %d", what, w[0], w[1])
		}
		for _, sel := range []string{startButton, engineSelect, `[data-testid="project"]`, messageBox, sendButton} {
			inside := eval[bool](t, p, `(() => { const r = document.querySelector('`+sel+`').getBoundingClientRect();
				return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; })()`)
			if !inside {
				t.Errorf("%s: %s is not within the screen's width%s", what, sel, p.state(t))
			}
		}
	}
	fits("before a session")
	if visible := eval[bool](t, p, `(() => { const r = document.querySelector('`+startButton+`').getBoundingClientRect();
		return r.width > 0 && r.top >= 0 && r.bottom <= window.innerHeight; })()`); !visible {
		t.Errorf("the Start button is off the screen%s", p.state(t))
	}
	p.do(t, "start a session and send a message",
		chromedp.SetValue(chromedp.CSS(engineSelect), "project-discovery"),
		chromedp.Click(chromedp.CSS(startButton)),
		chromedp.WaitEnabled(chromedp.CSS(messageBox)),
		chromedp.SendKeys(chromedp.CSS(messageBox), "We want to build a scheduling app for dental clinics so patients can book appointments online."+kb.Enter))
	p.waitFor(t, "the reply", repliesShown(1), 45*time.Second)
	fits("with a reply")
	// The sidebar comes under the chat, not beside it.
	if under := eval[bool](t, p, `document.querySelector('[data-testid="sidebar"]').getBoundingClientRect().top >= document.getElementById("chat").getBoundingClientRect().bottom`); !under {
		t.Errorf("the sidebar is not under the chat%s", p.state(t))
	}
}

// TestPageCannotBeFramed: another site cannot frame the page (clickjacking:
// the open dev tenant acts without a token) nor its files, and the page
// loads nothing but this server's files.
func TestPageCannotBeFramed(t *testing.T) {
	t.Parallel()
	n := gatewaytest.Start(t, gatewaytest.Options{Services: []string{"gateway"}})
	for _, path := range []string{"/", "/static/app.js", "/static/app.css"} {
		res := n.Get(t, path, "")
		if res.Status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.Status)
		}
		csp := res.Header.Get("Content-Security-Policy")
		directives := map[string]string{}
		for d := range strings.SplitSeq(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		for name, want := range map[string]string{"frame-ancestors": "'self'", "default-src": "'self'"} {
			if got := directives[name]; got != want {
				t.Errorf("GET %s: Content-Security-Policy %q: %s %q, want %q", path, csp, name, got, want)
			}
		}
		if got := res.Header.Get("X-Frame-Options"); got != "SAMEORIGIN" {
			t.Errorf("GET %s: X-Frame-Options %q, want SAMEORIGIN", path, got)
		}
	}
}
