package redact_test

import (
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
