package openai

import (
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/praetorhq/praetor/internal/llm"
)

// rawServer serves each request with the next of handlers (the last one
// again once they run out), and counts the requests.
func rawServer(t *testing.T, handlers ...http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(handlers)-1)
		handlers[i](w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func rawClient(t *testing.T, baseURL string) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: baseURL, APIKey: "sk-test", MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	c.sleep = (&clock{}).sleep
	c.randN = func(int64) int64 { return 0 }
	return c
}

const completion = `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// resetMidBody sends the status and half a body, then resets the connection.
func resetMidBody(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"id":"c1","choices":[`))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // close with a reset, not a FIN
		_ = conn.Close()
	}
}

func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(completion))
}

// A connection reset while the answer is read is a transport failure:
// retried, and not reported as a request that can never succeed.
func TestConnectionResetMidBodyIsRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{200, 503} {
		srv, n := rawServer(t, resetMidBody(status), ok)
		resp, err := rawClient(t, srv.URL+"/v1").Complete(t.Context(), userRequest("Hi."))
		if err != nil || resp.Content != "fine" || n.Load() != 2 {
			t.Errorf("status %d then a reset: %+v, %v after %d requests; want the retry's answer after 2", status, resp, err, n.Load())
		}
	}
	srv, _ := rawServer(t, resetMidBody(200))
	_, err := rawClient(t, srv.URL+"/v1").Complete(t.Context(), userRequest("Hi."))
	if !errors.Is(err, llm.ErrUnavailable) || errors.Is(err, llm.ErrBadRequest) {
		t.Errorf("resets every time: %v, want ErrUnavailable", err)
	}
}

// A server with no such path (a base URL without its /v1) and one that
// answers something other than a chat completion get errors that point at
// the base URL.
func TestWrongServerErrorsNameTheBaseURL(t *testing.T) {
	t.Parallel()
	notFound := func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "404 page not found", http.StatusNotFound) }
	html := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html>login</html>"))
	}
	stream := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"choices\":[]}\n\n"))
	}
	for name, h := range map[string]http.HandlerFunc{"404": notFound, "html": html, "stream": stream} {
		srv, _ := rawServer(t, h)
		_, err := rawClient(t, srv.URL).Complete(t.Context(), userRequest("Hi."))
		if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "/v1") {
			t.Errorf("%s: err = %v, want it to name the base URL %s and hint at /v1", name, err, srv.URL)
		}
		if name != "404" && !strings.Contains(err.Error(), "Content-Type text/") {
			t.Errorf("%s: err = %v, want the answer's Content-Type", name, err)
		}
	}
}

func TestBaseURLIsTheAPIRootAlone(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"https://example.openai.azure.com/openai/deployments/gpt4o?api-version=2024-06-01",
		"https://praetor:s3cr3t@llm-proxy.internal/v1",
		"https://llm.internal/v1#frag",
		"https://praetor:2024#s3cr3t@llm-proxy.internal/v1",
		"https://praetor:7781?s3cr3t@llm-proxy.internal/v1",
		"https://praetor:7781/s3cr3t@llm-proxy.internal/v1",
		"https://example.openai.azure.com/openai?api-version=2024-06-01&api-key=s3cr3t",
	} {
		_, err := New(Config{BaseURL: raw})
		if err == nil || !strings.Contains(err.Error(), "API root alone") {
			t.Errorf("%s: err = %v, want it refused", raw, err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the refusal quotes the password: %v", err)
		}
	}
}

// An error a gateway sends with a 200 is read as the error it is: its
// message kept, classified by its type, and retried when that may help.
func TestErrorSentWithA200(t *testing.T) {
	t.Parallel()
	errorIn200 := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}
	}
	overloaded := errorIn200(`{"error":{"message":"upstream provider overloaded, try again","type":"server_error"}}`)
	srv, n := rawServer(t, overloaded, ok)
	resp, err := rawClient(t, srv.URL+"/v1").Complete(t.Context(), userRequest("Hi."))
	if err != nil || resp.Content != "fine" || n.Load() != 2 {
		t.Errorf("an overloaded upstream: %+v, %v after %d requests; want the retry's answer", resp, err, n.Load())
	}
	srv, n = rawServer(t, overloaded)
	_, err = rawClient(t, srv.URL+"/v1").Complete(t.Context(), userRequest("Hi."))
	if !errors.Is(err, llm.ErrUnavailable) || !strings.Contains(err.Error(), "upstream provider overloaded") {
		t.Errorf("overloaded every time: %v, want ErrUnavailable with the server's message", err)
	}
	srv, n = rawServer(t, errorIn200(`{"error":{"message":"this model's maximum context length is 8192 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}`))
	_, err = rawClient(t, srv.URL+"/v1").Complete(t.Context(), userRequest("Hi."))
	if !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "maximum context length") || n.Load() != 1 {
		t.Errorf("a bad request: %v after %d requests, want ErrBadRequest with the message, not retried", err, n.Load())
	}
}

// A certificate the client does not trust, and TLS spoken to a server that
// does not (or the reverse), are settings to mend, not outages to wait out:
// one attempt each, and an error that says what to check.
func TestTLSMistakesAreNotRetried(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(ok))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes fail on purpose
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	plain, _ := rawServer(t, ok)
	for _, c := range []struct{ name, baseURL, want string }{
		{"untrusted certificate", tlsSrv.URL + "/v1", "add the CA to the system's trust store or name it in SSL_CERT_FILE"},
		{"https to a plain server", strings.Replace(plain.URL, "http://", "https://", 1) + "/v1", "check the scheme of the base URL"},
		{"http to a TLS server", strings.Replace(tlsSrv.URL, "https://", "http://", 1) + "/v1", "HTTPS server"},
	} {
		_, err := rawClient(t, c.baseURL).Complete(t.Context(), userRequest("Hi."))
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.Attempts != 1 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want one attempt and an error saying %q", c.name, err, c.want)
		}
	}
}

// OpenAI answers a wrong path with a JSON 404, not a text one: the base URL
// is named and /v1 hinted at all the same.
func TestJSON404HintsAtTheBaseURL(t *testing.T) {
	t.Parallel()
	srv, _ := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"Invalid URL (POST /chat/completions)","type":"invalid_request_error","param":null,"code":null}}`))
	})
	_, err := rawClient(t, srv.URL).Complete(t.Context(), userRequest("Hi."))
	if err == nil || !strings.Contains(err.Error(), srv.URL) || !strings.Contains(err.Error(), "/v1") ||
		!strings.Contains(err.Error(), "Invalid URL") {
		t.Errorf("err = %v, want the server's message, the base URL %s and a hint at /v1", err, srv.URL)
	}
}

// A wrong key fails every call: the client logs, at error level, what to fix,
// once a minute rather than once a call; and the part of the key OpenAI
// echoes is not kept in the message that is logged and recorded.
func TestUnauthorizedIsLoggedWithTheFix(t *testing.T) {
	t.Parallel()
	srv, _ := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: sk-badk*****999. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
	})
	var logs strings.Builder
	var mu sync.Mutex
	c, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-badkey999", KeySetting: "PRAETOR_LLM_API_KEY",
		Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	for range 3 {
		_, err = c.Complete(t.Context(), userRequest("Hi."))
		if !errors.Is(err, llm.ErrUnauthorized) {
			t.Fatalf("err = %v, want ErrUnauthorized", err)
		}
	}
	if apiErr := (*llm.APIError)(nil); !errors.As(err, &apiErr) || apiErr.Model != DefaultModel {
		t.Errorf("err = %#v, want it to name the model asked, %s", err, DefaultModel)
	}
	if strings.Contains(err.Error(), "sk-badk") || !strings.Contains(err.Error(), "Incorrect API key provided") {
		t.Errorf("err = %v, want the server's message without the key it echoes", err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(logs.String(), "level=ERROR")
	}
	if n := count(); n != 1 {
		t.Errorf("%d errors logged after 3 calls, want 1:\n%s", n, logs.String())
	}
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	if !strings.Contains(got, "PRAETOR_LLM_API_KEY") || strings.Contains(got, "sk-badk") {
		t.Errorf("log:\n%s\nwant it to name PRAETOR_LLM_API_KEY, without the key", got)
	}
	now = now.Add(time.Minute + time.Second)
	_, _ = c.Complete(t.Context(), userRequest("Hi."))
	if n := count(); n != 2 {
		t.Errorf("%d errors logged after a minute more, want 2", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A model that does not exist is a 404 too, which names the model: the base
// URL is right, and no hint says otherwise.
func TestModelNotFoundIsNotABaseURLMistake(t *testing.T) {
	t.Parallel()
	srv, _ := rawServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"message":"The model gpt-9 does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`))
	})
	_, err := rawClient(t, srv.URL+"/v1").Complete(t.Context(), userRequest("Hi."))
	if err == nil || !strings.Contains(err.Error(), "gpt-9") || strings.Contains(err.Error(), "check the base URL") {
		t.Errorf("err = %v, want the server's message alone", err)
	}
}
