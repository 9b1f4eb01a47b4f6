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

// The prefilter only skips patterns that cannot match: Detect finds what
// running every pattern finds, at the edges of each kind's least too.
func TestPrefilterSkipsOnlyWhatCannotMatch(t *testing.T) {
	texts := []string{
		"", "plain words only", "xoxb-0123456789 here", "xoxb-012345678 one short",
		"token is abcdefghijklmnop", "token: abcdefghijklmno", "4111 1111 1111 1", "4111111111111111",
		"123-45-6789", "12-345-678", "call 12 345 678", "call 12 345 6789", "+12345678", "+123456789", "(55) 123 456", "a@b.co", "a@b", "x @ y.io",
		"password is hunter2", "my pwd=abc", "token is abcdefg\u212aabcdefgh", "api_key=ſſſſſſſſſſſſſſſſ",
		"token: 0123456\u212a89abcdef", "sk-proj-abcdefghijklmnopqrstuvwxyz", "AKIA0123456789ABCDEF",
		"mail jane.doe+tag@example.co.uk or call +44 20 7946 0958; card 4539 1488 0343 6467, ssn 219-09-9999",
	}
	for _, s := range texts {
		got, want := detect(s, true), detect(s, false)
		if !slices.Equal(got, want) {
			t.Errorf("%q: with the prefilter %v, without %v", s, got, want)
		}
	}
	// The cases above do reach every kind, so the comparison is not empty.
	var kinds []Kind
	for _, s := range texts {
		kinds = append(kinds, Kinds(detect(s, false))...)
	}
	slices.Sort(kinds)
	if k := slices.Compact(kinds); len(k) != 6 {
		t.Fatalf("the cases find the kinds %v: want all six", k)
	}
}

func FuzzPrefilterSkipsOnlyWhatCannotMatch(f *testing.F) {
	f.Add("xoxb-0123456789 or 555-123-4567, a@b.io")
	f.Add("token = 0123456789abcdef and 4111-1111-1111-1111")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := detect(s, true), detect(s, false); !slices.Equal(got, want) {
			t.Fatalf("%q: with the prefilter %v, without %v", s, got, want)
		}
	})
}
