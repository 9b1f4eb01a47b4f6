//go:build race

package tokenizer

// Under the race detector regexp2 runs about fifteen times slower: the
// every-rune check takes one rune in runeStride (all of them below
// U+0800); the whole sweep runs without -race.
const runeStride = 7
