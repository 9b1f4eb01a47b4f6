package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/praetorhq/praetor/internal/loopback"
	"github.com/praetorhq/praetor/internal/store"
)

// Authenticator resolves a bearer token to its tenant and expiry (zero: it
// never expires). A token that does not authenticate is an error wrapping
// store.ErrUnauthenticated; any other error means the check itself failed.
type Authenticator func(ctx context.Context, token string) (tenant string, expires time.Time, err error)

// StoreAuthenticator authenticates API tokens of the relational store, as
// the gateway does.
func StoreAuthenticator(db store.Querier, now func() time.Time) Authenticator {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, token string) (string, time.Time, error) {
		tok, err := store.Authenticate(ctx, db, token, now())
		if err != nil {
			return "", time.Time{}, err
		}
		var exp time.Time
		if tok.ExpiresAt != nil {
			exp = *tok.ExpiresAt
		}
		return tok.TenantID, exp, nil
	}
}

// HTTPConfig configures the streamable HTTP endpoint.
type HTTPConfig struct {
	// Authenticate checks bearer tokens. Required.
	Authenticate Authenticator
	// OpenTenant, when set, serves requests without an Authorization header
	// that come from loopback as this tenant (praetor dev), as the gateway
	// does: under a loopback name, through no proxy and from no other
	// site's page (loopback.Foreign).
	OpenTenant string
	// SessionTimeout closes sessions idle this long. Default 1h.
	SessionTimeout time.Duration
	// Logger. Default: the server's.
	Logger *slog.Logger
	// StreamAuthInterval is how often a GET stream (the standalone SSE
	// stream of a session) opened with a token checks it again: once it is
	// revoked the stream ends within about this long; one that expires ends
	// at its expiry. Default 5s.
	StreamAuthInterval time.Duration
}

// HTTPHandler serves the memory tools over streamable HTTP.
type HTTPHandler struct {
	http.Handler
	srv *mcp.Server
}

// Handler returns the streamable HTTP endpoint. Every request needs a bearer
// API token and acts for its tenant; a session created with a token serves
// only requests with a token of the same tenant.
func (s *Server) Handler(cfg HTTPConfig) (*HTTPHandler, error) {
	if cfg.Authenticate == nil {
		return nil, errors.New("mcpserver: HTTPConfig.Authenticate is required")
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = time.Hour
	}
	if cfg.StreamAuthInterval <= 0 {
		cfg.StreamAuthInterval = 5 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = s.cfg.Logger
	}
	srv := s.MCP(cfg.OpenTenant)
	stream := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: cfg.SessionTimeout, Logger: log})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		tenant, exp, err := cfg.Authenticate(ctx, token)
		switch {
		case errors.Is(err, store.ErrUnauthenticated):
			return nil, fmt.Errorf("%w: the token is unknown, revoked or expired", auth.ErrInvalidToken)
		case err != nil:
			// The client is not at fault; the detail stays in the log.
			log.Error("memory MCP: check the bearer token", "err", err)
			return nil, errors.New("the token could not be checked; try again")
		}
		return &auth.TokenInfo{UserID: tenant, Expiration: exp}, nil
	}
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		guardStreams(stream, cfg.Authenticate, cfg.StreamAuthInterval, log))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.TrimSpace(r.Header.Get("Authorization")) == "" {
			msg := "send Authorization: Bearer <API token>"
			if cfg.OpenTenant != "" && loopback.Remote(r) {
				why := loopback.Foreign(r)
				if why == "" {
					stream.ServeHTTP(w, r)
					return
				}
				// As the gateway: another site's page open in the
				// developer's browser must not act as the local tenant.
				msg = why + "; a request without a token must come from this machine, to a loopback name " +
					"(localhost, 127.0.0.1), not from another site's page: " + msg + " (praetor tenant token issue)"
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="praetor"`)
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		bearer.ServeHTTP(w, r)
	})
	return &HTTPHandler{Handler: h, srv: srv}, nil
}

// Close ends every open session.
func (h *HTTPHandler) Close() {
	for ss := range h.srv.Sessions() {
		_ = ss.Close()
	}
}

// guardStreams ends a GET stream, which the SDK holds open until its request
// ends, once its token no longer authenticates: the token is checked every
// interval and at its expiry, and a revoked or expired one cancels the
// request (the client's next request gets 401). A POST's answer is checked
// when it is made.
func guardStreams(next http.Handler, check Authenticator, interval time.Duration, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := auth.TokenInfoFromContext(r.Context())
		if r.Method != http.MethodGet || info == nil {
			next.ServeHTTP(w, r)
			return
		}
		_, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		token = strings.TrimSpace(token)
		ctx, cancel := context.WithCancel(r.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			ticker := time.NewTicker(interval)
			defer ticker.Stop()
			var expiry <-chan time.Time
			if !info.Expiration.IsZero() {
				timer := time.NewTimer(time.Until(info.Expiration))
				defer timer.Stop()
				expiry = timer.C
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
				case <-expiry:
				}
				_, _, err := check(ctx, token)
				switch {
				case errors.Is(err, store.ErrUnauthenticated):
					log.Info("memory MCP: a stream's token no longer authenticates; the stream ends", "err", err)
					cancel()
					return
				case err != nil && ctx.Err() == nil:
					// The token is not known to be revoked: the stream goes on.
					log.Warn("memory MCP: check a stream's token again", "err", err)
				}
			}
		}()
		defer func() { cancel(); <-done }()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
