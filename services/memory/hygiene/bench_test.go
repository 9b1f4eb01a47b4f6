package hygiene

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/praetorhq/praetor/services/memory/graph"
)

// BenchmarkDuplicates joins 86,000 titles of 4 to 10 words from a
// 300-word vocabulary, the size of the Neo4j hygiene benchmark.
func BenchmarkDuplicates(b *testing.B) {
	vocab := make([]string, 300)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("word%03d", i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]graph.TitleRow, 86000)
	for i := range rows {
		w := make([]string, 4+rng.IntN(6))
		for j := range w {
			w[j] = vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())]
		}
		rows[i] = graph.TitleRow{ID: fmt.Sprint(i), Kind: graph.Decision, Title: strings.Join(w, " ") + fmt.Sprintf(" %d", i)}
	}
	b.ResetTimer()
	for range b.N {
		Duplicates(rows, 0.9, 10000)
	}
}
