package pgsql

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A session's search_path is outboxtop's whatever the connection string says
// (in any case, or in its options, which PostgreSQL applies before the
// startup parameters); lock_timeout, application_name and the connect
// timeout are the string's when it sets them, else the session's.
func TestSessionSetsItsSearchPath(t *testing.T) {
	for _, c := range []struct {
		dsn       string
		lock, app string
		connect   time.Duration
	}{
		{"postgres://u@h/db", "15000", "outboxtop", 5 * time.Second},
		{"postgres://u@h/db?search_path=public&Search_Path=evil&lock_timeout=3s&application_name=mine&connect_timeout=2", "3s", "mine", 2 * time.Second},
		{"postgres://u@h/db?options=-c%20search_path%3Dpublic&connect_timeout=60", "15000", "outboxtop", 5 * time.Second},
	} {
		cfg, err := pgx.ParseConfig(c.dsn)
		if err != nil {
			t.Fatal(err)
		}
		if err := (Session{App: "outboxtop", LockTimeout: 15 * time.Second, ConnectTimeout: 5 * time.Second}).apply(cfg); err != nil {
			t.Fatal(err)
		}
		var paths []string
		for k, v := range cfg.RuntimeParams {
			if strings.EqualFold(k, "search_path") {
				paths = append(paths, k+"="+v)
			}
		}
		if p := cfg.RuntimeParams; len(paths) != 1 || paths[0] != "search_path="+SearchPath || p["lock_timeout"] != c.lock || p["application_name"] != c.app || cfg.ConnectTimeout != c.connect {
			t.Errorf("%s: %v, connect timeout %v; want search_path %q alone, lock_timeout %s, application_name %s, %v",
				c.dsn, p, cfg.ConnectTimeout, SearchPath, c.lock, c.app, c.connect)
		}
	}
	if err := (Session{}).apply(&pgx.ConnConfig{}); err == nil {
		t.Error("a session without a lock timeout was set up")
	}
}
