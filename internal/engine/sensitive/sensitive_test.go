package sensitive

import (
	"slices"
	"testing"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Kind
		part string // the text of the first finding
	}{
		{"email", "reach me at jane.doe+x@example.co.uk please", []Kind{Email}, "jane.doe+x@example.co.uk"},
		{"us phone", "call (555) 123-4567 tomorrow", []Kind{Phone}, "(555) 123-4567"},
		{"intl phone", "my number is +44 20 7946 0958", []Kind{Phone}, "+44 20 7946 0958"},
		{"ssn", "SSN 123-45-6789", []Kind{SSN}, "123-45-6789"},
		{"never issued ssn", "ref 666-45-6789", nil, ""},
		{"card passes luhn", "card 4111 1111 1111 1111 exp 12/29", []Kind{Card}, "4111 1111 1111 1111"},
		{"card fails luhn", "order 4111 1111 1111 1112", nil, ""},
		{"password", "my password is hunter22!", []Kind{Password}, "hunter22!"},
		{"password colon", "pwd: s3cr3t", []Kind{Password}, "s3cr3t"},
		{"openai key", "key sk-abcdefghijklmnopqrstuvwxyz123456 ok", []Kind{APIKey}, "sk-abcdefghijklmnopqrstuvwxyz123456"},
		{"aws key", "AKIAIOSFODNN7EXAMPLE", []Kind{APIKey}, "AKIAIOSFODNN7EXAMPLE"},
		{"labelled token", "api key = 9f8e7d6c5b4a39281706", []Kind{APIKey}, "9f8e7d6c5b4a39281706"},
		{"budget is not a phone", "budget is $50,000 and 20 people for 6 months", nil, ""},
		{"year range is not a phone", "from 2024 to 2026", nil, ""},
		{"several", "mail a@b.io or call 555-123-4567", []Kind{Email, Phone}, "a@b.io"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := Detect(tt.text)
			var kinds []Kind
			for _, f := range fs {
				kinds = append(kinds, f.Kind)
			}
			if !slices.Equal(kinds, tt.want) {
				t.Fatalf("kinds = %v, want %v (%+v)", kinds, tt.want, fs)
			}
			if tt.part != "" && tt.text[fs[0].Start:fs[0].End] != tt.part {
				t.Errorf("first finding = %q, want %q", tt.text[fs[0].Start:fs[0].End], tt.part)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	got := Redact("email bob@example.com, password: letmein99, card 4242424242424242.")
	want := "email [REDACTED:email], password: [REDACTED:password], card [REDACTED:card_number]."
	if got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	if Redact("nothing here") != "nothing here" {
		t.Error("Redact changed clean text")
	}
	if k := Kinds(Detect("a@b.io and c@d.io and 555-123-4567")); !slices.Equal(k, []Kind{Email, Phone}) {
		t.Errorf("Kinds = %v", k)
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("call 555-123-4567 or mail x@y.io, password=abc123")
	f.Add("4111-1111-1111-1111")
	f.Fuzz(func(t *testing.T, s string) {
		r := Redact(s)
		if Contains(r) && r != s {
			// Redaction must remove what it found; only text whose findings
			// straddle the inserted markers may still match.
			for _, x := range Detect(r) {
				if x.Kind == Password || x.Kind == APIKey {
					continue
				}
				t.Fatalf("redacted %q still holds %s %q", r, x.Kind, r[x.Start:x.End])
			}
		}
	})
}
