package neo4j

import (
	"strings"
	"testing"
)

func TestEscapeLucene(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`C++`, `C\+\+`},
		{`a && b || !c`, `a \&\& b \|\| \!c`},
		{`(x) [y] {z} "q" ~ * ? : ^ / \`, `\(x\) \[y\] \{z\} \"q\" \~ \* \? \: \^ \/ \\`},
		{`AND OR NOT and`, `and or not and`},
		{`title:x`, `title\:x`},
		{`-neg +pos`, `\-neg \+pos`},
	}
	for _, tt := range tests {
		if got := EscapeLucene(tt.in); got != tt.want {
			t.Errorf("EscapeLucene(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLuceneQuery(t *testing.T) {
	t.Parallel()
	q := luceneQuery("sabc", `Use C++ (and "Rust") ft_scope:evil AND`)
	want := `+ft_scope:sabc +(use c and rust ft scope evil)`
	if q != want {
		t.Errorf("luceneQuery = %q, want %q", q, want)
	}
	if q := luceneQuery("sabc", "!!! ***"); q != "" {
		t.Errorf("query of no words = %q, want empty", q)
	}
	if n := strings.Count(luceneQuery("s", strings.Repeat("w ", 10)+strings.Join(strings.Fields(strings.Repeat("a b c d e f g h i j k l m n o p q r s t u v w x y z ", 10)), "x ")), " "); n > 70 {
		t.Errorf("query has %d clauses; it must stay far below Lucene's 1024", n)
	}
}
