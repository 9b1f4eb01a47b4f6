package tokenizer

import (
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestCount(t *testing.T) {
	tok, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]int{"": 0, "hello world": 2, "Hello, world!\n": 4}
	for text, want := range cases {
		if got := tok.Count(text); got != want {
			t.Errorf("Count(%q) = %d, want %d", text, got, want)
		}
	}
	if again, _ := New("cl100k_base"); again != tok {
		t.Error("New gave a second tokenizer for the same encoding")
	}
	if _, err := New("nope"); err == nil || !strings.Contains(err.Error(), "known: cl100k_base, o200k_base, p50k_base, r50k_base") {
		t.Errorf("New(nope) = %v, want an error naming the known encodings", err)
	}
	if _, kept := instances.Load("nope"); kept {
		t.Error("an unknown encoding stayed in the instances")
	}
}

func TestRank(t *testing.T) {
	tok, _ := New("")
	for text, want := range map[string]int{" London": 7295, " london": 63146, "hello": 15339} {
		if got, ok := tok.Rank(text); !ok || got != want {
			t.Errorf("Rank(%q) = %d, %t, want %d, true", text, got, ok, want)
		}
	}
	for _, text := range []string{"", "hello world", " Otley"} {
		if got, ok := tok.Rank(text); ok {
			t.Errorf("Rank(%q) = %d, true, want no token", text, got)
		}
	}
}

func TestTruncate(t *testing.T) {
	tok, _ := New("")
	cut, did := tok.Truncate("one two three four five", 2)
	if !did || tok.Count(cut) > 2 || !strings.HasPrefix("one two three four five", cut) {
		t.Fatalf("Truncate = %q, %v", cut, did)
	}
	if s, did := tok.Truncate("short", 10); did || s != "short" {
		t.Fatalf("Truncate of fitting text = %q, %v", s, did)
	}
	if s, _ := tok.Truncate("日本語のテキスト", 1); !strings.HasPrefix("日本語のテキスト", s) {
		t.Fatalf("Truncate broke a character: %q", s)
	}
}

func TestConcurrentCounts(t *testing.T) {
	tok, _ := New("")
	text := strings.Repeat("a line of text, with words\n", 50)
	want := len(tok.bpe.encode(text))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got := tok.Count(text); got != want {
					t.Errorf("Count = %d, want %d", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzChunkedCountIsExact checks that counting by cached chunks gives the
// count of encoding the text whole, for any text.
func FuzzChunkedCountIsExact(f *testing.F) {
	for _, s := range []string{"a\n\n  b", "a\rb\nc", "a\nb\rc", "\r", "\n", "", "x }\n  \n   foo", "\r\n\t\n y", "line one.\nline two:\n\n\n- item\n  - sub\n",
		" \n \n ", "}\n", "123456\n789", "a\n/b", "' \n's"} {
		f.Add(s)
	}
	tok, err := New("")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// The break finder, asked from offsets that grow by 1, 2 and 3.
		for step := 1; step <= 3; step++ {
			b := breakFinder{text: s, nl: -1, cr: -1}
			for i := 0; i <= len(s); i += step {
				want := strings.IndexAny(s[i:], "\n\r")
				if want >= 0 {
					want += i
				}
				if got := b.next(i); got != want {
					t.Fatalf("breakFinder(%q).next(%d) = %d, want %d", s, i, got, want)
				}
			}
		}
		whole := len(tok.bpe.encode(s))
		if got := tok.Count(s); got != whole {
			t.Fatalf("chunked count %d, whole count %d for %q (chunks %q)", got, whole, s, splitChunks(s))
		}
	})
}

// The cache is bounded: past maxCached counts it starts afresh.
func TestCacheIsBounded(t *testing.T) {
	tok, err := New("p50k_base") // whole texts are cached: one entry a call
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxCached + 10 {
		tok.Count(strconv.Itoa(i))
	}
	tok.mu.Lock()
	n := len(tok.counts)
	tok.mu.Unlock()
	if n == 0 || n > maxCached {
		t.Fatalf("the cache holds %d counts, want 1..%d", n, maxCached)
	}
	if got := tok.Count("12345"); got != 2 {
		t.Fatalf("Count(12345) after the cache started afresh = %d, want 2", got)
	}
}
