package tokenizer

import (
	"encoding/base64"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// tiktoken-go is the reference: this package encodes as it does, with a
// vocabulary the garbage collector does not trace.
var oracles = sync.OnceValue(func() map[string]*tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	out := map[string]*tiktoken.Tiktoken{}
	for name := range encodings {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			panic(err)
		}
		out[name] = enc
	}
	return out
})

// corpus is text of every kind a prompt holds, and text made to trip a
// tokenizer: the engines' own YAML, code, numbers, contractions, scripts
// other than Latin, emoji, long runs, special-token text, invalid UTF-8.
func corpus(t testing.TB) []string {
	texts := []string{
		"", "a", " ", "\n", "hello world", "Hello, world!\n", "tiktoken is great!",
		"I'm sure they'll say it's the users' app, we've seen, he'd've\n",
		"IT'S LOUD, YOU'RE RIGHT, WE'LL SEE", "don't 'quote' me",
		"1234567890 12 3.14159 1,000,000 2026-11-26T11:33:19Z 0xdeadbeef",
		"func main() {\n\tfmt.Println(\"hi\") // comment\n}\n",
		`{"field": "value", "confidence": 0.85, "list": [1, 2, 3], "nested": {"k": null}}`,
		"日本語のテキストと中文文本 and 한국어 텍스트", "Ünïcödé façade naïve café", "Привет, мир! Як справи?",
		"emoji 🙂🚀👩‍👩‍👧‍👦 flags 🇫🇷🇩🇪 and ✓ ✗ → ←", "مرحبا بالعالم", "नमस्ते दुनिया",
		"   leading and trailing   ", "\t\ttabs\t\tand\r\nwindows\r\nlines\r\n\r\n",
		"a\n\n  b", "x }\n  \n   foo", " \n \n ", strings.Repeat(" ", 300), strings.Repeat("\n", 50),
		strings.Repeat("a", 1000), strings.Repeat("ab", 700), strings.Repeat("🙂", 200), strings.Repeat("-=", 300),
		"supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
		"<|endoftext|> is text here, and <|fim_prefix|> too", "path/to/file.go:12:3: error: x/y/z//",
		"invalid \xff\xfe bytes \xc3 here \xe2\x82", "\x00\x01\x02 control \x7f",
		"https://example.com/a?b=c&d=e#f email@example.com +1 (555) 123-4567",
		strings.Repeat("the", 2000), strings.Repeat("Lorem", 100) + strings.Repeat("ipsum", 100),
	}
	// The engines' YAML: the prompts Praetor counts are made of it.
	files, err := filepath.Glob(filepath.Join("..", "..", "engines", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no engine files to read (%v)", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(data))
	}
	return texts
}

func TestEncodingMatchesTiktoken(t *testing.T) {
	texts := corpus(t)
	for name, oracle := range oracles() {
		t.Run(name, func(t *testing.T) {
			tok, err := New(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				want := oracle.EncodeOrdinary(text)
				got := tok.bpe.encode(text)
				if !slices.Equal(got, want) {
					t.Fatalf("encode(%.60q) = %d tokens %v..., tiktoken %d tokens %v...", text, len(got), head(got), len(want), head(want))
				}
				if n := tok.Count(text); n != len(want) {
					t.Fatalf("Count(%.60q) = %d, tiktoken %d", text, n, len(want))
				}
				if d, w := string(tok.bpe.decode(got)), oracle.Decode(want); d != w {
					t.Fatalf("decode(encode(%.60q)) = %.60q, tiktoken %.60q", text, d, w)
				}
				for _, max := range []int{1, 3, len(want) / 2} {
					cut, did := tok.Truncate(text, max)
					wantCut := text
					if len(want) > max {
						wantCut = strings.ToValidUTF8(oracle.Decode(want[:max]), "")
					}
					if cut != wantCut || did != (len(want) > max) {
						t.Fatalf("Truncate(%.60q, %d) = %.60q, %v; want %.60q, %v", text, max, cut, did, wantCut, len(want) > max)
					}
				}
			}
		})
	}
}

func head(toks []int) []int { return toks[:min(len(toks), 8)] }

// FuzzEncodingMatchesTiktoken checks any text against tiktoken-go, in the
// default and the newest encoding.
func FuzzEncodingMatchesTiktoken(f *testing.F) {
	for _, s := range corpus(f) {
		if len(s) < 2000 {
			f.Add(s)
		}
	}
	cl, err := New("cl100k_base")
	if err != nil {
		f.Fatal(err)
	}
	o200, err := New("o200k_base")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range []*Tokenizer{cl, o200} {
			want := oracles()[tok.encoding].EncodeOrdinary(s)
			if got := tok.bpe.encode(s); !slices.Equal(got, want) {
				t.Fatalf("%s: encode(%q) = %v, tiktoken %v", tok.encoding, s, got, want)
			}
			if n := tok.bpe.count(s); n != len(want) {
				t.Fatalf("%s: count(%q) = %d, tiktoken %d", tok.encoding, s, n, len(want))
			}
		}
	})
}

// The vocabulary is a handful of objects, not one or more a token: the
// collector marks nothing of it at its cycles.
func TestVocabularyIsFewObjects(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b, err := loadBPE("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	objects := int64(after.HeapObjects) - int64(before.HeapObjects)
	t.Logf("cl100k_base: %d tokens, %d heap objects, %d kB", len(b.ends), objects, (after.HeapAlloc-before.HeapAlloc)/1024)
	if objects > 5000 {
		t.Fatalf("the vocabulary of %d tokens takes %d heap objects: want a few arrays", len(b.ends), objects)
	}
	if r, ok := b.rank([]byte("hello")); !ok || string(b.token(r)) != "hello" {
		t.Fatalf("rank(hello) = %d, %v", r, ok)
	}
	runtime.KeepAlive(b)
}

// The pieces are cut over runes, as tiktoken cuts them: an invalid byte is
// encoded as U+FFFD.
func TestInvalidUTF8IsReplaced(t *testing.T) {
	tok, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	got := string(tok.bpe.decode(tok.bpe.encode("a\xffb")))
	if !utf8.ValidString(got) || got != "a\uFFFDb" {
		t.Fatalf("decode(encode(a\\xffb)) = %q, want %q", got, "a\uFFFDb")
	}
}

func BenchmarkCount(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "..", "engines", "project-discovery.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	tok, _ := New("")
	oracle := oracles()["cl100k_base"]
	b.Run("praetor", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tok.bpe.count(text)
		}
	})
	b.Run("tiktoken-go", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			oracle.EncodeOrdinary(text)
		}
	})
	// Count on text it has not seen: every chunk misses the cache.
	b.Run("Count-fresh", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			fresh := &Tokenizer{bpe: tok.bpe, encoding: tok.encoding, chunked: tok.chunked, seeds: tok.seeds, counts: map[textKey]int32{}}
			fresh.Count(text)
		}
	})
	// Count on text cut into lines by lone carriage returns, already
	// counted: finding the chunks is all the work, and it must stay linear
	// (helper-40 found a quadratic one).
	cr := strings.Repeat("ab cd\r", 40_000)
	tok.Count(cr)
	b.Run("Count-cr-lines", func(b *testing.B) {
		b.SetBytes(int64(len(cr)))
		for b.Loop() {
			tok.Count(cr)
		}
	})
	// The pre-tokenizer alone: the scanner, and regexp2 running the pattern.
	b.Run("pieces", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tok.bpe.pieces(text, func([]byte) {})
		}
	})
	b.Run("pieces-regexp2", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			tok.bpe.patternPieces(text, func([]byte) {})
		}
	})
}

// Long pieces are merged by a heap (mergeLong), short ones by scanning
// (mergeShort): both give the same tokens.
func TestLongPiecesMergeAsShortOnes(t *testing.T) {
	tok, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"ab", "etaoin shrdlu", "abcdefghijklmnopqrstuvwxyz", "0123456789.,;-"}
	for i := range 200 {
		abc := alphabets[i%len(alphabets)]
		piece := make([]byte, 1+rng.IntN(1500))
		for j := range piece {
			piece[j] = abc[rng.IntN(len(abc))]
		}
		short := tok.bpe.mergeShort(piece, nil)
		long := tok.bpe.mergeLong(piece, nil)
		starts := func(ps []part) []int {
			var out []int
			for _, p := range ps {
				out = append(out, p.start)
			}
			return out
		}
		if !slices.Equal(starts(short), starts(long)) {
			t.Fatalf("%q: mergeShort cuts at %v, mergeLong at %v", piece, starts(short), starts(long))
		}
	}
}

// A failing or strange ranks file is refused with the file, the line and
// what is wrong; a rank the file skips is an empty token.
func TestParseRanks(t *testing.T) {
	re := regexp2.MustCompile(encodings["r50k_base"], regexp2.None)
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct{ name, file, err string }{
		{"no rank", b64([]byte("a")) + "\n", "x.tiktoken line 1: want"},
		{"negative rank", b64([]byte("a")) + " -1\n", "line 1: want"},
		{"huge rank", b64([]byte("a")) + " 99999999999\n", "line 1: want"},
		{"extra field", b64([]byte("a")) + " 0 1\n", "line 1: want"},
		{"bad base64", "!!!! 0\n", "line 1: token"},
		{"empty token", " 0\n", "line 1: empty token"},
		{"rank twice", b64([]byte("a")) + " 0\n" + b64([]byte("b")) + " 0\n", "rank 0 twice"},
		{"token twice", b64([]byte("a")) + " 0\n" + b64([]byte("a")) + " 1\n", `token "a" twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRanks("x.tiktoken", []byte(tc.file), re)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
	b, err := parseRanks("x.tiktoken", []byte(b64([]byte("a"))+" 0\n"+b64([]byte("b"))+" 2\n"+b64([]byte("ab"))+" 3\n"), re)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.token(1)) != 0 || string(b.token(3)) != "ab" {
		t.Fatalf("tokens 1 and 3 = %q, %q; want empty and ab", b.token(1), b.token(3))
	}
	if got := b.encode("ab"); !slices.Equal(got, []int{3}) {
		t.Fatalf("encode(ab) = %v, want [3]", got)
	}
}
