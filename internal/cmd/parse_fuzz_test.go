package cmd

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/outboxtop/outboxtop/internal/inspect"
)

// FuzzDBConfig: resolving any connection string (URL or key=value, from --dsn or
// DATABASE_URL) never panics, and a refusal never echoes the password.
func FuzzDBConfig(f *testing.F) {
	f.Add(true, "app", "s3cr3t-pw", "db.example:5432", "/orders?sslmode=require")
	f.Add(true, "app", "p@ss:w/rd%zz", "[::1", "/x")
	f.Add(true, "app", "hunter2hunter2", "host:99999", "/db")
	f.Add(true, "app", "tops3cret", "h", "/db?connect_timeout=abc")
	f.Add(true, "a", "pw-with-\"quote\"`tick", "h:5432", "/db?sslmode=bogus")
	f.Add(false, "app", "'quoted secret'", "h", "port=notaport")
	f.Add(false, "app", "secret\\' x", "h", "sslmode=verify-full sslrootcert=/nonexistent")
	f.Add(false, "app", "plainsecret", "h", "target_session_attrs=bogus")
	f.Fuzz(func(t *testing.T, asURL bool, user, password, host, rest string) {
		var dsn, without string
		if asURL {
			dsn = "postgres://" + user + ":" + password + "@" + host + rest
			without = "postgres://" + user + ":@" + host + rest
		} else {
			dsn = "user=" + user + " password=" + password + " host=" + host + " " + rest
			without = "user=" + user + " password= host=" + host + " " + rest
		}
		for _, fromEnv := range []bool{false, true} {
			d := dbFlags{schema: "public", connectTimeout: 5 * time.Second}
			env := map[string]string{}
			if fromEnv {
				env["DATABASE_URL"] = dsn
			} else {
				d.dsn = dsn
			}
			_, err := d.config(IO{Getenv: func(k string) string { return env[k] }})
			if err == nil {
				continue
			}
			if !errors.As(err, new(usageError)) {
				t.Fatalf("config(%q): %v is not a usage error", dsn, err)
			}
			msg := err.Error()
			for _, secret := range secretForms(password, asURL) {
				if strings.Contains(msg, secret) && !strings.Contains(without, secret) && !strings.Contains(dsnErrorWords, secret) {
					t.Fatalf("config(%q) error echoes the password %q: %s", dsn, secret, msg)
				}
			}
		}
	})
}

// dsnErrorWords is text our and pgx's messages use on their own; a "password" made of
// it is not a leak when it shows up.
const dsnErrorWords = "invalid database connection string: cannot parse failed to parse as URL as keyword/value " +
	"invalid port invalid sslmode invalid target_session_attrs unparseable outside range " +
	"invalid connect_timeout missing equal sign unterminated quoted string invalid escape " +
	"sslrootcert sslcert sslkey no such file or directory open read failed to read CA file " +
	"unable to add CA to cert pool invalid value for invalid character in host name"

// secretForms are the ways a password may be echoed: as written, and URL-decoded.
func secretForms(p string, asURL bool) []string {
	var forms []string
	if len(p) >= 4 {
		forms = append(forms, p)
	}
	if asURL {
		if d, err := url.PathUnescape(p); err == nil && len(d) >= 4 && d != p {
			forms = append(forms, d)
		}
	}
	return forms
}

// FuzzFilterFlags: the events and action commands' filter flags, from the command
// line or OUTBOXTOP_* variables, give either a filter that Validate accepts or a
// usage error; never a panic.
func FuzzFilterFlags(f *testing.F) {
	f.Add("OrderPlaced", "order", "o-1", "f000", "timeout", "1h", "", false)
	f.Add("", "", "", "f0000001-0000-4000-8000-000000000001", "", "-5m", "1.5µs", true)
	f.Add("\x00", "\xff", "'; DROP TABLE outbox_event; --", "------------------------------------", "%", "9223372036854775807ns", "2562048h", false)
	f.Add("x", "y", "z", "zz", "e", "1e9s", "-0s", true)
	f.Fuzz(func(t *testing.T, eventType, aggType, aggID, idPrefix, errText, older, newer string, viaEnv bool) {
		values := map[string]string{"event-type": eventType, "aggregate-type": aggType, "aggregate-id": aggID,
			"id-prefix": idPrefix, "error-contains": errText, "older-than": older, "newer-than": newer}
		var args []string
		env := map[string]string{}
		for k, v := range values {
			if viaEnv {
				env[EnvName(k)] = v
			} else {
				args = append(args, "--"+k+"="+v)
			}
		}
		io := IO{Out: discard{}, Err: discard{}, Getenv: func(k string) string { return env[k] }}
		fs := newFlagSet("events", io)
		var ff filterFlags
		ff.register(fs)
		err := parse(fs, args, io)
		if err == nil {
			var flt = ff.f
			if _, err = ff.filter(); err == nil {
				if verr := flt.Validate(); verr != nil {
					t.Fatalf("filter() accepted %+v but Validate refuses it: %v", flt, verr)
				}
				return
			}
		}
		if !errors.As(err, new(usageError)) {
			t.Fatalf("flags %q env %q: %v is not a usage error", args, env, err)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// FuzzPayloadFlags: --payload and --header, from the command line or
// OUTBOXTOP_PAYLOAD and OUTBOXTOP_HEADER, give a filter Validate accepts or a
// one-line usage error without the term's control characters; never a panic.
func FuzzPayloadFlags(f *testing.F) {
	for _, s := range []string{"customer.id=42", "customer.id", `{"customer":{"tier":"gold"}}`, "items[*].sku=x",
		`a="\u001b[2J"`, "a=\x1b[2J", "a=\x00", "\xff", `"unterminated`, "a..b", "a[01]", "x=1e999999999"} {
		f.Add(s, "trace-id=abc", false)
		f.Add("a", s, true)
	}
	f.Fuzz(func(t *testing.T, payload, header string, viaEnv bool) {
		var args []string
		env := map[string]string{}
		if viaEnv {
			env[EnvName("payload")], env[EnvName("header")] = payload, header
		} else {
			args = []string{"--payload", payload, "--header", header}
		}
		io := IO{Out: discard{}, Err: discard{}, Getenv: func(k string) string { return env[k] }}
		fs := newFlagSet("events", io)
		var ff filterFlags
		ff.register(fs)
		err := parse(fs, args, io)
		if err == nil {
			var flt inspect.Filter
			if flt, err = ff.filter(); err == nil {
				if verr := flt.Validate(); verr != nil {
					t.Fatalf("filter() accepted %+v but Validate refuses it: %v", flt, verr)
				}
				return
			}
		}
		if !errors.As(err, new(usageError)) {
			t.Fatalf("%q %q: %v is not a usage error", payload, header, err)
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.ContainsAny(msg, "\x00\x1b\x07") {
			t.Fatalf("%q %q: error %q is not one clean line", payload, header, msg)
		}
	})
}
