//go:build !race

package tokenizer

const runeStride = 1
