package runner

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/sensitive"
	"github.com/praetorhq/praetor/internal/llm"
)

// QAReport is step 13's verdict on a reply.
type QAReport struct {
	Passed bool     `json:"passed"`
	Issues []string `json:"issues,omitempty"`
}

// QA issue codes.
const (
	QAEmpty        = "empty"
	QATooLong      = "too_long"
	QASecretEchoed = "secret_echoed"
	QARepeated     = "repeated_previous_reply"
	QANoQuestion   = "no_question_in_extract_phase"
)

// qaCheck is step 13. It fixes what must not reach the user — an empty
// reply (replaced by the fallback), secrets (passwords, API keys, card and
// social security numbers are redacted; the user's own email or phone may be
// repeated), a reply beyond maxChars (cut at a sentence end) — and reports
// what is merely weak: repeating the previous reply, or asking nothing in a
// phase whose dominant mode is extract.
func qaCheck(reply string, fallback string, m *engine.WorkingMemory, phase *engine.Phase, maxChars int) (string, QAReport) {
	var issues []string
	if strings.TrimSpace(reply) == "" {
		issues = append(issues, QAEmpty)
		reply = fallback
	}
	for _, f := range sensitive.Detect(reply) {
		if f.Kind == sensitive.Password || f.Kind == sensitive.APIKey || f.Kind == sensitive.Card || f.Kind == sensitive.SSN {
			issues = append(issues, QASecretEchoed)
			reply = redactSecrets(reply)
			break
		}
	}
	if len(reply) > maxChars {
		issues = append(issues, QATooLong)
		reply = cutAtSentence(reply, maxChars)
	}
	for i := len(m.History) - 1; i >= 0; i-- {
		if m.History[i].Role == engine.RoleAssistant {
			if strings.EqualFold(strings.TrimSpace(m.History[i].Content), strings.TrimSpace(reply)) {
				issues = append(issues, QARepeated)
			}
			break
		}
	}
	if phase != nil && phase.ModeBlend.Dominant() == engine.ModeExtract && !strings.Contains(reply, "?") {
		issues = append(issues, QANoQuestion)
	}
	return reply, QAReport{Passed: len(issues) == 0, Issues: issues}
}

func redactSecrets(s string) string {
	fs := sensitive.Detect(s)
	var b strings.Builder
	last := 0
	for _, f := range fs {
		if f.Kind == sensitive.Email || f.Kind == sensitive.Phone {
			continue
		}
		b.WriteString(s[last:f.Start])
		b.WriteString("[REDACTED:" + string(f.Kind) + "]")
		last = f.End
	}
	b.WriteString(s[last:])
	return b.String()
}

func cutAtSentence(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	r = r[:max]
	for i := len(r) - 1; i > max/2; i-- {
		if r[i] == '.' || r[i] == '?' || r[i] == '!' {
			return string(r[:i+1])
		}
	}
	return strings.TrimRightFunc(string(r), unicode.IsSpace) + "…"
}

// finished checks how the model ended a reply. A reply withheld by the
// provider's filter, or empty (a reasoning model that spent its tokens
// thinking), is an error: the turn gets the fallback reply, degraded. One
// cut off at the token limit is kept up to its last whole sentence, and
// short says so: it is degraded too.
func finished(reply string, resp *llm.Response, maxTokens int) (kept, short string, err error) {
	if resp == nil {
		return reply, "", nil
	}
	switch {
	case resp.FinishReason == llm.FinishContentFilter:
		return "", "", errors.New("response generation: the provider withheld the reply (finish reason content_filter)")
	case strings.TrimSpace(reply) == "":
		return "", "", fmt.Errorf("response generation: the model's reply was empty (finish reason %q)", resp.FinishReason)
	case resp.FinishReason == llm.FinishLength:
		return wholeSentences(reply), fmt.Sprintf("the reply was cut off at the token limit (%d, ResponseMaxTokens); "+
			"it ends at its last whole sentence", maxTokens), nil
	}
	return reply, "", nil
}

// wholeSentences is s up to its last sentence end (engine.EndsSentence:
// not the point of "3.5", of a list's "2." or of "e.g."), or s and an
// ellipsis when it has none.
func wholeSentences(s string) string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	for i := len(s) - 1; i > 0; i-- {
		if engine.EndsSentence(s, i) {
			return s[:engine.SentenceTail(s, i)]
		}
	}
	return s + "…"
}

// fallbackReply is the reply of a turn whose response generation failed:
// it still moves the conversation by asking for the next obligation.
func fallbackReply(next *engine.Obligation) string {
	const sorry = "Sorry, I could not prepare a full answer just now. "
	if next == nil {
		return sorry + "Is there anything you would like to add or change?"
	}
	if next.Question != "" {
		return sorry + "Let's keep going: " + next.Question
	}
	d := strings.TrimSuffix(strings.TrimSpace(next.Description), ".")
	if d != "" {
		d = strings.ToLower(d[:1]) + d[1:]
	}
	return sorry + "Let's keep going: could you tell me more so that " + d + "?"
}
