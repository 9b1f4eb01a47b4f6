package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/praetorhq/praetor/pkg/contracts"
)

// Tenant is an isolated customer of Praetor: every row of its data carries
// its ID as tenant_id.
type Tenant struct {
	// ID becomes a NATS subject token: [A-Za-z0-9_-], 1 to 128 characters.
	ID string
	// Name is for people: 1 to 200 characters, with no control character,
	// line separator or bidirectional control (see ValidateName).
	Name string
	// CreatedAt is set by CreateTenant to now when zero.
	CreatedAt time.Time
}

// maxNameLen bounds the names of tenants and tokens, in characters.
const maxNameLen = 200

func (t Tenant) validate() error {
	if !contracts.ValidToken(t.ID) {
		return fmt.Errorf("tenant id %q: want 1 to 128 of [A-Za-z0-9_-] (it becomes a subject token)", t.ID)
	}
	if err := ValidateName(t.Name); err != nil {
		return fmt.Errorf("tenant %s: %w", t.ID, err)
	}
	return nil
}

// ValidateName checks the name of a tenant or a token (the memory's
// governance tokens too). Names are printed
// as they are, in tables (tenant list, token list): a control character
// (a newline, an escape sequence) or an invisible bidirectional control
// would let a name clear the terminal or pass for another row.
func ValidateName(name string) error {
	n := utf8.RuneCountInString(name)
	if n == 0 || n > maxNameLen {
		return fmt.Errorf("name %q: want 1 to %d characters", name, maxNameLen)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("name %q: want valid UTF-8", name)
	}
	for _, r := range name {
		if what, why := unprintable(r); what != "" {
			return fmt.Errorf("name %q: want no %s (%U)%s: names are printed in tables", name, what, r, why)
		}
	}
	return nil
}

// unprintable says what r is, and why it harms, when a name may not hold
// it (see ValidateName); what is "" when it may.
func unprintable(r rune) (what, why string) {
	switch {
	case unicode.IsControl(r):
		return "control character", ""
	case unicode.In(r, unicode.Zl, unicode.Zp):
		return "line separator", ""
	case unicode.Is(unicode.Bidi_Control, r):
		return "bidirectional control", ", which reorders what follows it"
	}
	return "", ""
}

// PrintableName is a name as a table shows it: as it is when ValidateName's
// rule takes its every character, else quoted with them escaped
// (strconv.Quote). Names stored before the rule are read as they are, and
// one of them could otherwise clear the terminal or pass for another row.
func PrintableName(name string) string {
	if !utf8.ValidString(name) {
		return strconv.Quote(name)
	}
	for _, r := range name {
		if what, _ := unprintable(r); what != "" {
			return strconv.Quote(name)
		}
	}
	return name
}

// CreateTenant adds a tenant. It returns ErrConflict when the id is taken.
func CreateTenant(ctx context.Context, q Querier, t Tenant) error {
	if err := t.validate(); err != nil {
		return fmt.Errorf("create tenant: %w", err)
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	n, err := q.Exec(ctx,
		`INSERT INTO tenants (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING`,
		t.ID, t.Name, t.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("create tenant %s: %w", t.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("create tenant %s: %w", t.ID, ErrConflict)
	}
	return nil
}

// GetTenant returns a tenant, or ErrNotFound.
func GetTenant(ctx context.Context, q Querier, id string) (Tenant, error) {
	t := Tenant{ID: id}
	err := q.QueryRow(ctx, `SELECT name, created_at FROM tenants WHERE id = $1`, id).Scan(&t.Name, &t.CreatedAt)
	if err != nil {
		return Tenant{}, fmt.Errorf("get tenant %s: %w", id, err)
	}
	return t, nil
}

// ListTenants returns every tenant, by id.
func ListTenants(ctx context.Context, q Querier) ([]Tenant, error) {
	rows, err := q.Query(ctx, `SELECT id, name, created_at FROM tenants ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	defer rows.Close()
	var out []Tenant
	for rows.Next() {
		var t Tenant
		if err := rows.Scan(&t.ID, &t.Name, &t.CreatedAt); err != nil {
			return nil, fmt.Errorf("list tenants: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	return out, nil
}

// tenantExists returns nil when the tenant exists, an ErrNotFound naming it
// otherwise.
func tenantExists(ctx context.Context, q Querier, id string) error {
	var one int
	err := q.QueryRow(ctx, `SELECT 1 FROM tenants WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("tenant %q: %w", id, ErrNotFound)
	}
	return err
}
