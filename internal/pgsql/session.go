package pgsql

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SearchPath is the search_path of every session outboxtop opens: the
// built-ins, and this session's temporary tables last. A schema others may
// create in is never on it, so no role's function, aggregate or operator is
// chosen over a built-in.
const SearchPath = "pg_catalog, pg_temp"

// Session is what a session outboxtop opens runs with, set on its startup
// parameters by Pool and Connect.
type Session struct {
	// App is application_name, unless the connection string names one.
	App string
	// LockTimeout is lock_timeout, unless the connection string sets one, so
	// no statement waits for a lock without end. It must be positive.
	LockTimeout time.Duration
	// ConnectTimeout bounds connecting when the connection string sets no
	// bound or a longer one; 0 keeps the string's.
	ConnectTimeout time.Duration
}

// apply sets s on cc. search_path is always SearchPath, whatever the
// connection string says: PostgreSQL applies the startup parameters after
// the string's options and over the role's and database's defaults.
func (s Session) apply(cc *pgx.ConnConfig) error {
	if s.LockTimeout <= 0 {
		return errors.New("pgsql: a session needs a positive lock timeout")
	}
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	for k := range cc.RuntimeParams {
		if strings.EqualFold(k, "search_path") {
			delete(cc.RuntimeParams, k)
		}
	}
	cc.RuntimeParams["search_path"] = SearchPath
	if cc.RuntimeParams["application_name"] == "" && s.App != "" {
		cc.RuntimeParams["application_name"] = s.App
	}
	if cc.RuntimeParams["lock_timeout"] == "" {
		cc.RuntimeParams["lock_timeout"] = strconv.FormatInt(max(1, s.LockTimeout.Milliseconds()), 10)
	}
	if s.ConnectTimeout > 0 && (cc.ConnectTimeout == 0 || cc.ConnectTimeout > s.ConnectTimeout) {
		cc.ConnectTimeout = s.ConnectTimeout
	}
	return nil
}

// Connect opens one connection on cfg, set up for s (cfg is changed).
func Connect(ctx context.Context, cfg *pgx.ConnConfig, s Session) (*pgx.Conn, error) {
	if err := s.apply(cfg); err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Pool opens a pool on cfg whose every connection is set up for s (cfg is
// changed).
func Pool(ctx context.Context, cfg *pgxpool.Config, s Session) (*pgxpool.Pool, error) {
	if err := s.apply(cfg.ConnConfig); err != nil {
		return nil, err
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}
