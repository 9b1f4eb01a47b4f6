// Package redact hides the credentials of connection strings (PostgreSQL,
// NATS, Neo4j URLs, an LLM server's base URL) before they are printed: in
// help texts, errors and logs.
package redact

import (
	"regexp"
	"strconv"
	"strings"
)

// Mask stands for a hidden secret, as url.URL.Redacted writes it.
const Mask = "xxxxx"

// tokenSchemes are the schemes whose user alone is a secret: NATS takes a
// token as nats://TOKEN@host, and an HTTP server (an LLM gateway) a key as
// https://KEY@host.
var tokenSchemes = map[string]bool{"nats": true, "tls": true, "ws": true, "wss": true, "http": true, "https": true}

// passwordParam is a secret given as a parameter: in a URL's query
// (?password=…, an LLM gateway's ?api-key=… or ?key=…) or a key/value DSN
// (password='…' host=…). sslkey=, a file's path, is not one.
var passwordParam = regexp.MustCompile(`(?i)\b((?:ssl)?password|pass|token|access_token|api[-_]?key|key|secret)(\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&;,]*)`)

// URL returns raw with its password masked, the user kept:
// postgres://u:pw@h/db becomes postgres://u:xxxxx@h/db, as url.URL.Redacted
// does. Unlike Redacted it needs no valid URL, since a password with '#',
// '?', '/' or '@' in it is what breaks one: the user information is what
// comes between "://" and the last '@' before the next URL of a
// comma-separated list (NATS takes several). A NATS token (nats://T@h) is
// masked whole, as is the user alone of an http(s) URL (a key), and so is
// a password=… (api-key=…, key=…, token=…) parameter of the query or of a
// key/value DSN. Without a scheme (host:port/v1, as a base URL is mistyped),
// what comes before the last '@' is taken as the user information, unless
// it holds a space (a key/value DSN's user=a@b).
func URL(raw string) string {
	if raw == "" {
		return raw
	}
	if !strings.Contains(raw, "://") {
		if at := strings.LastIndexByte(raw, '@'); at >= 0 && !strings.ContainsAny(raw[:at], " \t") {
			user, _, hasPassword := strings.Cut(raw[:at], ":")
			raw = maskedUser(user, hasPassword, true) + raw[at:]
		}
	}
	var b strings.Builder
	rest := raw
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		scheme := rest[:i]
		if j := strings.LastIndexAny(scheme, ", \t"); j >= 0 {
			scheme = scheme[j+1:]
		}
		b.WriteString(rest[:i+3])
		rest = rest[i+3:]
		end := len(rest)
		if next := strings.Index(rest, "://"); next >= 0 {
			end = next
		}
		at := strings.LastIndexByte(rest[:end], '@')
		if at < 0 {
			continue
		}
		user, _, hasPassword := strings.Cut(rest[:at], ":")
		b.WriteString(maskedUser(user, hasPassword, tokenSchemes[strings.ToLower(scheme)]))
		rest = rest[at:]
	}
	return passwordParam.ReplaceAllString(b.String(), "${1}${2}"+Mask)
}

// maskedUser is the user information written back: the user and a masked
// password, or the user alone unless it may be the secret itself (a token,
// a key).
func maskedUser(user string, hasPassword, userMayBeSecret bool) string {
	switch {
	case hasPassword:
		return user + ":" + Mask
	case userMayBeSecret:
		return Mask
	}
	return user
}

// Error returns err with raw masked (by URL) wherever its message quotes
// it: url.Parse's errors, and some drivers', quote the URL they were given,
// password included. It wraps err, so errors.Is and errors.As still see
// what it wraps; a nil err stays nil.
func Error(err error, raw string) error {
	if err == nil || raw == "" {
		return err
	}
	masked := URL(raw)
	if masked == raw {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), raw, masked)
	quoted, maskedQuoted := strconv.Quote(raw), strconv.Quote(masked)
	msg = strings.ReplaceAll(msg, quoted[1:len(quoted)-1], maskedQuoted[1:len(maskedQuoted)-1])
	return &maskedError{msg: msg, err: err}
}

type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }
