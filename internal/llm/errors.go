package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Categories of failure. Adapters return an *APIError that wraps one of them,
// so callers decide with errors.Is whatever the provider.
var (
	// ErrRateLimited: the provider refused for rate or quota (HTTP 429).
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrUnavailable: the provider failed or could not be reached (5xx,
	// connection refused or reset).
	ErrUnavailable = errors.New("llm: provider unavailable")
	// ErrTimeout: an attempt took longer than the adapter's timeout.
	ErrTimeout = errors.New("llm: timed out")
	// ErrUnauthorized: the key was refused (401, 403). Fix the key.
	ErrUnauthorized = errors.New("llm: unauthorized")
	// ErrBadRequest: the provider rejected the request (other 4xx), or the
	// adapter could not build it. Retrying the same request cannot help.
	ErrBadRequest = errors.New("llm: request rejected")
	// ErrBadResponse: the provider answered with something that is not a
	// chat completion (malformed JSON, no choices).
	ErrBadResponse = errors.New("llm: malformed response")
	// ErrRefused: the model declined to answer (a structured-output refusal).
	ErrRefused = errors.New("llm: model refused")
	// ErrInvalidAnswer: a JSON answer did not parse or validate, re-asks
	// included (see CompleteJSON). The caller degrades.
	ErrInvalidAnswer = errors.New("llm: invalid answer")
	// ErrInvalidSchema: a Request.Schema is not a usable JSON Schema; a bug
	// in the caller, not in the model's answer.
	ErrInvalidSchema = errors.New("llm: invalid schema")
)

// APIError is a failed call to a provider.
type APIError struct {
	// Provider is the adapter's name, e.g. "openai".
	Provider string
	// Model is the model the call asked for, the adapter's default when the
	// request named none; empty when the adapter did not say.
	Model string
	// Status is the HTTP status, or 0 when there was no HTTP answer.
	Status int
	// Code is the provider's error code or type, e.g. "insufficient_quota".
	Code string
	// Message is the provider's explanation, or the transport error.
	Message string
	// Retryable is true when the same request may succeed later. The adapter
	// has already retried it; a caller with a longer horizon (an event
	// redelivery) may try again.
	Retryable bool
	// RetryAfter is the wait the provider asked for, when it named one.
	RetryAfter time.Duration
	// Attempts counts the calls made, retries included.
	Attempts int
	// Err is the category, one of the Err* sentinels of this package.
	Err error
	// Cause is the underlying error, when there is one (a timeout's
	// context.DeadlineExceeded, a decoder's syntax error).
	Cause error
	// Usage is what the provider charged for an answer that is still an
	// error (a refusal), zero when it charged nothing.
	Usage Usage
}

func (e *APIError) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("llm: call failed")
	}
	var detail []string
	if e.Status != 0 {
		detail = append(detail, fmt.Sprintf("status %d", e.Status))
	}
	if e.Code != "" {
		detail = append(detail, "code "+e.Code)
	}
	if e.Attempts > 1 {
		detail = append(detail, fmt.Sprintf("%d attempts", e.Attempts))
	}
	if e.RetryAfter > 0 {
		detail = append(detail, "retry after "+e.RetryAfter.String())
	}
	if len(detail) > 0 {
		b.WriteString(" (" + strings.Join(detail, ", ") + ")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap gives errors.Is and errors.As both the category and the cause.
func (e *APIError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// IsRetryable reports whether err is a provider failure that a later attempt
// may not repeat. Context cancellation is not retryable.
func IsRetryable(err error) bool {
	var apiErr *APIError
	return errors.As(err, &apiErr) && apiErr.Retryable
}

// InvalidAnswerError is a JSON answer that stayed unusable after re-asking.
type InvalidAnswerError struct {
	// Attempts counts the answers asked for, the first one included.
	Attempts int
	// Reason says what was wrong with the last answer.
	Reason string
	// Content is the last answer, as the model gave it.
	Content string
}

func (e *InvalidAnswerError) Error() string {
	return fmt.Sprintf("%s after %d attempts: %s", ErrInvalidAnswer, e.Attempts, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidAnswer) true.
func (e *InvalidAnswerError) Unwrap() error { return ErrInvalidAnswer }

// Outcomes of a call, as metrics label them and records keep them. The set
// is closed so a label never grows with the data.
const (
	OutcomeOK            = "ok"
	OutcomeCanceled      = "canceled"
	OutcomeTimeout       = "timeout"
	OutcomeRateLimited   = "rate_limited"
	OutcomeUnavailable   = "unavailable"
	OutcomeUnauthorized  = "unauthorized"
	OutcomeBadRequest    = "bad_request"
	OutcomeBadResponse   = "bad_response"
	OutcomeRefused       = "refused"
	OutcomeInvalidAnswer = "invalid_answer"
	OutcomeInvalidSchema = "invalid_schema"
	OutcomeError         = "error"
)

// outcomes maps categories to outcome names, most specific first: a timeout
// wraps context.DeadlineExceeded too, and must read as a timeout.
var outcomes = []struct {
	err  error
	name string
}{
	{ErrTimeout, OutcomeTimeout},
	{ErrRateLimited, OutcomeRateLimited},
	{ErrUnavailable, OutcomeUnavailable},
	{ErrUnauthorized, OutcomeUnauthorized},
	{ErrBadRequest, OutcomeBadRequest},
	{ErrBadResponse, OutcomeBadResponse},
	{ErrRefused, OutcomeRefused},
	{ErrInvalidAnswer, OutcomeInvalidAnswer},
	{ErrInvalidSchema, OutcomeInvalidSchema},
	{context.Canceled, OutcomeCanceled},
	{context.DeadlineExceeded, OutcomeTimeout},
}

// Outcome names the result of a call: OutcomeOK for nil, else the category
// of err, OutcomeError when it has none.
func Outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	for _, o := range outcomes {
		if errors.Is(err, o.err) {
			return o.name
		}
	}
	return OutcomeError
}

// OutcomeErr is the reverse of Outcome: the sentinel of an outcome name, nil
// for OutcomeOK and unknown names. A replayer uses it to give a recorded
// failure back its category.
func OutcomeErr(outcome string) error {
	for _, o := range outcomes {
		if o.name == outcome {
			return o.err
		}
	}
	return nil
}
