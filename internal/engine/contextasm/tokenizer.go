package contextasm

import "github.com/praetorhq/praetor/internal/tokenizer"

// Tokenizer counts tokens the way the response model does.
type Tokenizer interface {
	Count(text string) int
	// Truncate returns the longest prefix of text within max tokens.
	Truncate(text string, max int) string
}

// DefaultEncoding is the tiktoken encoding used when an engine names none.
const DefaultEncoding = tokenizer.Default

// Tiktoken is the process's tokenizer of an encoding, with its count cache
// (package tokenizer), as a Tokenizer.
type Tiktoken struct{ t *tokenizer.Tokenizer }

// NewTiktoken returns the tokenizer of an encoding (cl100k_base, o200k_base,
// p50k_base, r50k_base); "" means DefaultEncoding.
func NewTiktoken(encoding string) (*Tiktoken, error) {
	t, err := tokenizer.New(encoding)
	if err != nil {
		return nil, err
	}
	return &Tiktoken{t: t}, nil
}

// Count implements Tokenizer.
func (t *Tiktoken) Count(text string) int { return t.t.Count(text) }

// Truncate implements Tokenizer.
func (t *Tiktoken) Truncate(text string, max int) string {
	s, _ := t.t.Truncate(text, max)
	return s
}
