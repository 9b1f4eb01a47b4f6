package redact_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/internal/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"postgres://u:pgSECRET@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://h:5432/db?sslmode=disable", "postgres://h:5432/db?sslmode=disable"},
		{"postgres://u:p#w?d/x@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgres://u:a@b@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://h/db?user=u&password=SECRET&sslmode=disable", "postgres://h/db?user=u&password=xxxxx&sslmode=disable"},
		{"host=h user=u password=SECRET dbname=db", "host=h user=u password=xxxxx dbname=db"},
		{"host=h password='s e\\'cret' dbname=db", "host=h password=xxxxx dbname=db"},
		{"nats://u:NatsSecret@127.0.0.1:1", "nats://u:xxxxx@127.0.0.1:1"},
		{"nats://TOKEN@127.0.0.1:4222", "nats://xxxxx@127.0.0.1:4222"},
		{"nats://a:S1@h1:4222,nats://b:S2@h2:4222", "nats://a:xxxxx@h1:4222,nats://b:xxxxx@h2:4222"},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"bolt://neo4j:NeoSecret@127.0.0.1:7687", "bolt://neo4j:xxxxx@127.0.0.1:7687"},
		{"./.praetor", "./.praetor"},
		{"sslkey=/etc/praetor/client.key sslmode=verify-full", "sslkey=/etc/praetor/client.key sslmode=verify-full"},
		{"host=h user=u@corp password=SECRET", "host=h user=u@corp password=xxxxx"},
		// An LLM server's base URL (formerly openai.RedactURL's): a password
		// with '#', '?' or '/' in it breaks the URL into a fragment, a query
		// or a path that holds the rest of it; a user alone may be the key; a
		// key may come as a query parameter; a mistyped one has no scheme.
		{"https://praetor:s3cr3tSECRET@llm-proxy.internal/v1", "https://praetor:xxxxx@llm-proxy.internal/v1"},
		{"https://praetor:2024#SECRET@llm-proxy.internal/v1", "https://praetor:xxxxx@llm-proxy.internal/v1"},
		{"https://praetor:7781?SECRET@llm-proxy.internal/v1", "https://praetor:xxxxx@llm-proxy.internal/v1"},
		{"https://praetor:7781/SECRET@llm-proxy.internal/v1", "https://praetor:xxxxx@llm-proxy.internal/v1"},
		{"ftp://praetor:sk-SECRET@x/v1", "ftp://praetor:xxxxx@x/v1"},
		{"https://sk-SECRET@llm-proxy.internal/v1", "https://xxxxx@llm-proxy.internal/v1"},
		{"http://TOKEN@localhost:11434/v1", "http://xxxxx@localhost:11434/v1"},
		{"praetor:SECRET@llm-proxy.internal/v1", "praetor:xxxxx@llm-proxy.internal/v1"},
		{"sk-SECRET@llm-proxy.internal/v1", "xxxxx@llm-proxy.internal/v1"},
		{"https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=SECRET", "https://x.openai.azure.com/openai?api-version=2024-06-01&api-key=xxxxx"},
		{"https://generativelanguage.googleapis.com/v1beta/openai?key=SECRET", "https://generativelanguage.googleapis.com/v1beta/openai?key=xxxxx"},
		{"https://llm.internal/v1?access_token=SECRET#frag", "https://llm.internal/v1?access_token=xxxxx"},
		{"https://api.openai.com/v1", "https://api.openai.com/v1"},
		{"localhost:8000", "localhost:8000"},
	}
	for _, tt := range tests {
		got := redact.URL(tt.in)
		if got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		for _, secret := range []string{"SECRET", "Secret", "TOKEN", "S1", "S2", "p#w"} {
			if strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q: shows %s", tt.in, got, secret)
			}
		}
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	if redact.Error(nil, "nats://u:S@h") != nil {
		t.Error("Error(nil) is not nil")
	}
	plain := errors.New("dial nats://h:4222: refused")
	if got := redact.Error(plain, "nats://h:4222"); got != plain {
		t.Errorf("Error of a URL without secrets = %v, want the error itself", got)
	}
	for _, raw := range []string{"nats://u:Nat%zzSecret@h:1", "nats://u:Nat Secret\"@h:1", "postgres://u:pgSecret@h/db"} {
		_, perr := url.Parse(raw)
		if perr == nil {
			perr = fmt.Errorf("driver for %s: bad", raw)
		}
		err := redact.Error(fmt.Errorf("connect: %w", perr), raw)
		if strings.Contains(err.Error(), "Secret") || !strings.Contains(err.Error(), "u:xxxxx@h") {
			t.Errorf("Error(%q) = %q, want the URL masked", raw, err)
		}
		if !errors.Is(err, perr) {
			t.Errorf("Error(%q) does not wrap the error", raw)
		}
	}
}
