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
	bearer := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(stream)
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
