package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/testenv"
	"github.com/praetorhq/praetor/pkg/contracts"
	"github.com/praetorhq/praetor/pkg/events"
)

// TestOmitLLMPrompts runs a turn on praetor dev with --llm-omit-prompts: the
// recorded LLM calls keep the request hash and the answer, not the prompt.
func TestOmitLLMPrompts(t *testing.T) {
	httpAddr, natsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	start(t, nil, "dev", "--data-dir", t.TempDir(), "--http-addr", httpAddr, "--nats-listen", natsAddr, "--llm-omit-prompts")
	base := "http://" + httpAddr
	testenv.WaitHTTP(t, base+"/readyz", 30*time.Second)
	post := func(path string, body, out any) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s: status %d, %v", path, resp.StatusCode, err)
		}
	}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	post("/v1/sessions", map[string]string{"engine_id": "project-discovery"}, &sess)
	var turn struct {
		Status string `json:"status"`
	}
	post("/v1/sessions/"+sess.SessionID+"/turns?wait=30s", map[string]string{"message": "We want a booking app for our salon."}, &turn)
	if turn.Status != "answered" {
		t.Fatalf("turn %+v, want answered", turn)
	}

	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	bus, err := events.New(nc, events.Config{Subject: contracts.Subject})
	if err != nil {
		t.Fatal(err)
	}
	records := 0
	err = bus.Replay(context.Background(), events.ReplayConfig{Stream: contracts.StreamLLM}, func(r events.Record) error {
		if r.Err != nil {
			return r.Err
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(r.Event.Data(), &rec); err != nil {
			return err
		}
		records++
		if _, ok := rec["request"]; ok {
			t.Errorf("record %s holds the prompt", r.Event.ID())
		}
		if len(rec["request_hash"]) < 10 || len(rec["content"]) < 3 {
			t.Errorf("record %s lacks the request hash or the answer: %s", r.Event.ID(), r.Event.Data())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if records < 2 {
		t.Errorf("%d LLM calls recorded for a turn, want at least 2 (extraction and reply)", records)
	}

	// Replay needs only the answers: it rebuilds the session's state.
	resp, err := http.Get(base + "/v1/sessions/" + sess.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var state struct {
		StateHash string `json:"state_hash"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&state); err != nil || state.StateHash == "" {
		t.Fatalf("session state: %v, hash %q", err, state.StateHash)
	}
	out, err := exec.Command(binary, "replay", "--session", sess.SessionID, "--nats-url", "nats://"+natsAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), state.StateHash) {
		t.Fatalf("replay: %v, want the live state hash %s in:\n%s", err, state.StateHash, out)
	}
}
