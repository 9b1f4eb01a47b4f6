package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/llm/openai/openaitest"
	"github.com/praetorhq/praetor/internal/testenv"
)

// TestModelAnswersThatDoNotParse runs praetor dev against an
// OpenAI-compatible server whose extraction answers are never the JSON asked
// for: the extraction is re-asked with the error, then degraded (nothing
// extracted, the failure logged and counted), and the turn is still answered.
func TestModelAnswersThatDoNotParse(t *testing.T) {
	model := openaitest.NewServer(t)
	model.Default = func(req openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat != nil {
			return openaitest.Reply{Content: "Sure! The user wants an app, I think."} // not JSON
		}
		return openaitest.Reply{Content: "Thanks. Who will use the app day to day?"}
	}
	httpAddr := testenv.FreeAddr(t)
	p := start(t, []string{"PRAETOR_LLM_API_KEY=sk-test", "OPENAI_API_KEY="},
		"dev", "--data-dir", t.TempDir(), "--http-addr", httpAddr, "--nats-listen", "",
		"--llm-provider", "openai", "--llm-base-url", model.BaseURL(), "--llm-model", "gpt-test")
	base := "http://" + httpAddr
	testenv.WaitHTTP(t, base+"/readyz", 30*time.Second)

	post := func(path string, body any, out any) int {
		b, _ := json.Marshal(body)
		resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %v in %s", path, err, data)
		}
		return resp.StatusCode
	}
	var sess struct {
		SessionID string `json:"session_id"`
	}
	post("/v1/sessions", map[string]string{"engine_id": "project-discovery"}, &sess)
	var turn struct {
		Status   string `json:"status"`
		Reply    string `json:"reply"`
		Degraded bool   `json:"degraded"`
	}
	if code := post("/v1/sessions/"+sess.SessionID+"/turns?wait=30s",
		map[string]string{"message": "We want a mobile app for our field technicians."}, &turn); code != 200 {
		t.Fatalf("turn: status %d %+v", code, turn)
	}
	if turn.Status != "answered" || !turn.Degraded || turn.Reply == "" {
		t.Fatalf("turn = %+v, want answered, degraded, with a reply", turn)
	}

	extractionCalls := 0
	for _, r := range model.Requests() {
		if r.Chat.ResponseFormat != nil {
			extractionCalls++
		}
	}
	if extractionCalls != 3 {
		t.Errorf("extraction asked %d times, want 3 (the first answer and two re-asks)", extractionCalls)
	}
	resp, err := http.Get(base + "/v1/sessions/" + sess.SessionID + "/extractions")
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Extractions []json.RawMessage `json:"extractions"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&log)
	resp.Body.Close()
	if len(log.Extractions) != 0 {
		t.Errorf("a degraded turn logged %d extractions, want none", len(log.Extractions))
	}
	metrics := testenv.WaitHTTP(t, base+"/metrics", 5*time.Second)
	if !strings.Contains(metrics, "praetor_extractions_degraded_total 1") {
		t.Errorf("the degraded extraction is not counted:\n%s", grepLines(metrics, "degraded"))
	}
	if !strings.Contains(p.Output(), "extraction degraded") {
		t.Errorf("the degraded extraction is not logged")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
