package background_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/pkg/events/eventstest"
	"github.com/praetorhq/praetor/services/runner/runnertest"
)

// A praetor serve --services background process is SIGKILLed while it
// runs a research task (its offline model answers slowly): another
// background process takes the task over after the ack wait, and the task
// completes once and is merged into the session once.
func TestSIGKILLedBackgroundProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds praetor and runs it as processes; runs without -short")
	}
	dbURL := testenv.Postgres(t)
	srv, err := events.StartServer(events.ServerConfig{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	bin, err := testenv.BuildPraetor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	token := testenv.PrepareTenant(t, bin, dbURL, "acme")
	ctx := context.Background()
	env := []string{"NATS_URL=" + srv.ClientURL(), "DATABASE_URL=" + dbURL}
	serve := func(services string, extra ...string) (*testenv.Process, string) {
		t.Helper()
		addr := testenv.FreeAddr(t)
		p := testenv.StartProcess(t, bin, env, append([]string{"serve", "--services", services, "--http-addr", addr, "--log-level", "warn",
			"--ack-wait", "2s", "--drain-timeout", "5s"}, extra...)...)
		testenv.WaitHTTP(t, "http://"+addr+"/readyz", 30*time.Second)
		return p, addr
	}
	_, front := serve("gateway,extractor,runner")
	doomed, doomedAddr := serve("background", "--llm-offline-latency", "20s")

	api := func(method, path string, body, out any) int {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, "http://"+front+path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if out != nil {
			_ = json.Unmarshal(data, out)
		}
		return res.StatusCode
	}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	if code := api("POST", "/v1/sessions", map[string]string{"engine_id": "project-discovery", "project_id": "field-app"}, &sess); code != 201 {
		t.Fatalf("create a session: %d", code)
	}
	for _, msg := range []string{
		"Hi! Our field technicians keep losing track of their jobs because everything runs on paper and spreadsheets. We want to build a mobile app to fix that.",
		"Last month we missed three urgent repairs and lost a big customer. That's why it became a priority now.",
	} {
		var turn struct {
			Status string `json:"status"`
		}
		if code := api("POST", "/v1/sessions/"+sess.SessionID+"/turns?wait=30s", map[string]string{"message": msg}, &turn); code != 200 {
			t.Fatalf("turn: %d %+v", code, turn)
		}
	}
	// The competitive scan is dispatched; the doomed worker runs it (its
	// model takes 20s) and dies mid-task.
	runnertest.WaitFor(t, 30*time.Second, "the doomed worker to run the task", func() bool {
		return strings.Contains(get(t, "http://"+doomedAddr+"/metrics"), "praetor_background_tasks_running 1")
	})
	doomed.Kill(t)
	serve("background")

	type task struct {
		TaskID  string          `json:"task_id"`
		Status  string          `json:"status"`
		Attempt int             `json:"attempt"`
		Result  json.RawMessage `json:"result"`
	}
	var scan task
	runnertest.WaitFor(t, 60*time.Second, "the task to complete on the other worker", func() bool {
		var tv struct {
			Tasks []task `json:"tasks"`
		}
		api("GET", "/v1/sessions/"+sess.SessionID+"/tasks", nil, &tv)
		for _, x := range tv.Tasks {
			if x.TaskID == "competitive_scan" && x.Status == "completed" {
				scan = x
				return true
			}
		}
		return false
	})
	if scan.Attempt != 1 || !strings.Contains(string(scan.Result), "Existing products") {
		t.Errorf("the completed scan = %+v", scan)
	}

	bus, err := events.New(eventstest.Connect(t, srv), events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	count := func(stream, ceType string) int {
		n := 0
		err := bus.Replay(ctx, events.ReplayConfig{Stream: stream}, func(r events.Record) error {
			if r.Err == nil && r.Event.Type() == ceType {
				var p struct {
					TaskID string `json:"task_id"`
				}
				_ = json.Unmarshal(r.Event.Data(), &p)
				if p.TaskID == "competitive_scan" {
					n++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if d, c, m := count(contracts.StreamTasks, contracts.TaskDispatchedSpec.Type), count(contracts.StreamTasks, contracts.TaskCompletedSpec.Type),
		count(contracts.StreamTurns, contracts.TaskMergedSpec.Type); d != 1 || c != 1 || m != 1 {
		t.Errorf("the scan was dispatched %d, completed %d and merged %d times; want once each", d, c, m)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
