package fleet

import (
	"errors"
	"fmt"
	"github.com/outboxtop/outboxtop/internal/termtext"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/jackc/pgx/v5"

	"github.com/outboxtop/outboxtop/internal/ident"
	"github.com/outboxtop/outboxtop/internal/securefile"
	"github.com/outboxtop/outboxtop/wire"
)

// Defaults of a fleet file.
const (
	DefaultPollInterval = 5 * time.Second
	DefaultTimeout      = 3 * time.Second
	// DefaultLagTimeout bounds one consumer lag check of an outbox with brokers.
	DefaultLagTimeout = 5 * time.Second
)

// File is a parsed fleet file.
type File struct {
	// Path is where it was read from.
	Path     string
	Outboxes []Outbox
	// Operators limit operator keys (outboxtop serve --fleet) to some outboxes.
	Operators []Operator
}

// Operator limits one operator key to the outboxes its selectors match (a name,
// or a label as KEY=VALUE). A key with no Operator entry is not limited: its
// role comes from serve's --operators file alone.
type Operator struct {
	// Fingerprint is the key's SHA256 fingerprint as ssh-keygen -lf prints it.
	Fingerprint string
	Outboxes    []string
}

// MayAct reports whether the operator key with this fingerprint may act on
// the outbox named name: yes when the file does not limit the key, else when
// one of its selectors matches the outbox.
func (f *File) MayAct(fingerprint, name string) bool {
	var o *Outbox
	for k := range f.Outboxes {
		if f.Outboxes[k].Name == name {
			o = &f.Outboxes[k]
		}
	}
	limited := false
	for _, op := range f.Operators {
		if op.Fingerprint != fingerprint {
			continue
		}
		limited = true
		for _, sel := range op.Outboxes {
			if o != nil && o.Match(sel) {
				return true
			}
		}
	}
	return !limited && o != nil
}

// Outbox is one outbox of the fleet.
type Outbox struct {
	Name   string
	Schema string
	// Brokers and Groups are the outbox's Kafka brokers and the consumer groups
	// (names or patterns; none: every group reading the outbox's topics) whose
	// lag the Poller checks. Without brokers there is no lag check.
	Brokers []string
	Groups  []string
	// Labels tag the outbox (team, tier, …) for filters and operator keys.
	Labels map[string]string
	// PollInterval and Timeout: see the package doc.
	PollInterval time.Duration
	Timeout      time.Duration
	// LagTimeout bounds one consumer lag check (lag_timeout).
	LagTimeout time.Duration
	// dsn is the resolved connection string: never printed.
	dsn string
}

// DSN is the outbox's connection string. It may carry a password: never show it.
func (o Outbox) DSN() string { return o.dsn }

// Match reports whether the outbox is the one named sel, or carries the label
// sel when sel is KEY=VALUE.
func (o Outbox) Match(sel string) bool {
	if k, v, ok := strings.Cut(sel, "="); ok {
		got, has := o.Labels[strings.TrimSpace(k)]
		return has && got == strings.TrimSpace(v)
	}
	return o.Name == sel
}

// LabelString is the labels as k=v pairs, sorted by key.
func (o Outbox) LabelString() string {
	keys := make([]string, 0, len(o.Labels))
	for k := range o.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + "=" + o.Labels[k]
	}
	return strings.Join(keys, ",")
}

// fileSpec and outboxSpec are the file's shape for the typed decode.
type fileSpec struct {
	PollInterval duration     `toml:"poll_interval"`
	Timeout      duration     `toml:"timeout"`
	LagTimeout   duration     `toml:"lag_timeout"`
	Outbox       []outboxSpec `toml:"outbox"`
	Operator     []struct {
		Fingerprint string   `toml:"fingerprint"`
		Outboxes    []string `toml:"outboxes"`
	} `toml:"operator"`
}

type outboxSpec struct {
	Name         string            `toml:"name"`
	DSN          string            `toml:"dsn"`
	DSNEnv       string            `toml:"dsn_env"`
	DSNFile      string            `toml:"dsn_file"`
	Schema       string            `toml:"schema"`
	Brokers      []string          `toml:"brokers"`
	Groups       []string          `toml:"groups"`
	Labels       map[string]string `toml:"labels"`
	PollInterval duration          `toml:"poll_interval"`
	Timeout      duration          `toml:"timeout"`
	LagTimeout   duration          `toml:"lag_timeout"`
}

var (
	fileKeys     = []string{"poll_interval", "timeout", "lag_timeout", "outbox", "operator"}
	operatorKeys = []string{"fingerprint", "outboxes"}
	outboxKeys   = []string{"name", "dsn", "dsn_env", "dsn_file", "schema", "brokers", "groups", "labels", "poll_interval", "timeout", "lag_timeout"}
)

// duration reads "5s", "1m30s".
type duration struct {
	time.Duration
	set bool
}

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration (like 5s or 1m): %q", string(b))
	}
	if v <= 0 {
		return fmt.Errorf("must be positive: %q", string(b))
	}
	d.Duration, d.set = v, true
	return nil
}

// Load reads and checks the fleet file at path and resolves every outbox's
// connection string with getenv (os.Getenv when nil). Every error is one line
// that names the file and, where it has one, the outbox.
func Load(path string, getenv func(string) string) (*File, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	raw, err := securefile.Read("fleet file", path, securefile.Plain, maxFleetFile)
	if err != nil {
		return nil, err
	}
	f, err := parse(path, string(raw), getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Parse is Load of text already read (path names it in errors and anchors
// dsn_file). Like Load it refuses, before decoding, a text over 1 MiB or nested
// more than 8 levels deep (checkShape).
func Parse(path, text string, getenv func(string) string) (*File, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	f, err := parse(path, text, getenv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func parse(path, text string, getenv func(string) string) (*File, error) {
	if err := checkShape(text); err != nil {
		return nil, err
	}
	// First the keys, on a generic decode, so an unknown one is reported with the
	// outbox it sits in (the typed decode's metadata does not say which).
	var generic map[string]any
	if _, err := toml.Decode(text, &generic); err != nil {
		return nil, errors.New(termtext.OneLine(err.Error()))
	}
	if err := unknownKeys(generic); err != nil {
		return nil, err
	}
	var spec fileSpec
	if _, err := toml.Decode(text, &spec); err != nil {
		return nil, errors.New(termtext.OneLine(err.Error()))
	}
	if len(spec.Outbox) == 0 {
		return nil, errors.New("no outboxes: add an [[outbox]] table")
	}
	f := &File{Path: path}
	seen := map[string]bool{}
	read := map[string]string{} // ident.Key of each name → the name
	for k, s := range spec.Outbox {
		o, err := s.outbox(k, filepath.Dir(path), getenv, spec)
		if err != nil {
			return nil, err
		}
		// Names a person reads as the same ("orders", "Orders") are one name:
		// an operator key limited to one would seem to act on the other.
		if other, dup := read[ident.Key(o.Name)]; dup {
			return nil, fmt.Errorf("outbox %q: duplicate name (as %q reads)", o.Name, other)
		}
		seen[o.Name], read[ident.Key(o.Name)] = true, o.Name
		f.Outboxes = append(f.Outboxes, o)
	}
	for k, op := range spec.Operator {
		if !strings.HasPrefix(op.Fingerprint, "SHA256:") || len(op.Fingerprint) < 20 {
			return nil, fmt.Errorf("operator #%d: fingerprint: the key's SHA256:… fingerprint, as ssh-keygen -lf prints it", k+1)
		}
		if len(op.Outboxes) == 0 {
			return nil, fmt.Errorf("operator %s: outboxes: name the outboxes (or KEY=VALUE labels) the key may act on", op.Fingerprint)
		}
		for _, sel := range op.Outboxes {
			if _, _, isLabel := strings.Cut(sel, "="); !isLabel && !seen[sel] {
				return nil, fmt.Errorf("operator %s: no outbox %q in this file", op.Fingerprint, sel)
			}
		}
		f.Operators = append(f.Operators, Operator{Fingerprint: op.Fingerprint, Outboxes: op.Outboxes})
	}
	return f, nil
}

func unknownKeys(generic map[string]any) error {
	for k := range generic {
		if !slices.Contains(fileKeys, k) {
			return fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(fileKeys, ", "))
		}
	}
	ops, _ := generic["operator"].([]map[string]any)
	if generic["operator"] != nil && ops == nil {
		return errors.New(`"operator" must be an array of tables: write [[operator]]`)
	}
	for k, o := range ops {
		for key := range o {
			if !slices.Contains(operatorKeys, key) {
				return fmt.Errorf("operator #%d: unknown key %q (known: %s)", k+1, key, strings.Join(operatorKeys, ", "))
			}
		}
	}
	list, _ := generic["outbox"].([]map[string]any)
	if generic["outbox"] != nil && list == nil {
		return errors.New(`"outbox" must be an array of tables: write [[outbox]]`)
	}
	for k, o := range list {
		name := fmt.Sprintf("#%d", k+1)
		if n, ok := o["name"].(string); ok && n != "" {
			name = fmt.Sprintf("%q", n)
		}
		keys := make([]string, 0, len(o))
		for key := range o {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			if !slices.Contains(outboxKeys, key) {
				return fmt.Errorf("outbox %s: unknown key %q (known: %s)", name, key, strings.Join(outboxKeys, ", "))
			}
		}
	}
	return nil
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

func (s outboxSpec) outbox(k int, dir string, getenv func(string) string, file fileSpec) (Outbox, error) {
	if s.Name == "" {
		return Outbox{}, fmt.Errorf("outbox #%d: name is missing", k+1)
	}
	if !namePattern.MatchString(s.Name) {
		return Outbox{}, fmt.Errorf("outbox #%d: name %q: use letters, digits, '.', '_' and '-' (at most 63)", k+1, s.Name)
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("outbox %q: "+format, append([]any{s.Name}, args...)...)
	}
	o := Outbox{Name: s.Name, Schema: s.Schema, Brokers: s.Brokers, Groups: s.Groups, Labels: s.Labels,
		PollInterval: DefaultPollInterval, Timeout: DefaultTimeout, LagTimeout: DefaultLagTimeout}
	if o.Schema == "" {
		o.Schema = wire.DefaultSchema
	}
	if err := wire.ValidateSchema(o.Schema); err != nil {
		return Outbox{}, errf("schema: %v", err)
	}
	for key := range o.Labels {
		if key == "" || strings.ContainsAny(key, "= \t") {
			return Outbox{}, errf("label %q: a label's name is a word without '=' or spaces", key)
		}
	}
	for _, d := range []struct {
		dst *time.Duration
		v   duration
	}{{&o.PollInterval, file.PollInterval}, {&o.Timeout, file.Timeout}, {&o.LagTimeout, file.LagTimeout},
		{&o.PollInterval, s.PollInterval}, {&o.Timeout, s.Timeout}, {&o.LagTimeout, s.LagTimeout}} {
		if d.v.set {
			*d.dst = d.v.Duration
		}
	}
	set := 0
	for _, v := range []string{s.DSN, s.DSNEnv, s.DSNFile} {
		if v != "" {
			set++
		}
	}
	switch {
	case set == 0:
		return Outbox{}, errf("no connection string: set dsn_env (a variable holding it) or dsn_file (a file holding it)")
	case set > 1:
		return Outbox{}, errf("set one of dsn, dsn_env and dsn_file")
	case s.DSNEnv != "":
		o.dsn = strings.TrimSpace(getenv(s.DSNEnv))
		if o.dsn == "" {
			return Outbox{}, errf("dsn_env: %s is not set", s.DSNEnv)
		}
	case s.DSNFile != "":
		p := s.DSNFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		// A connection string in a file is there for its password: it is checked
		// as a secret, and a named pipe is refused rather than waited on.
		b, err := securefile.Read("dsn_file", p, securefile.Secret, maxDSNFile)
		if err != nil {
			return Outbox{}, errf("%s", termtext.OneLine(err.Error()))
		}
		o.dsn = strings.TrimSpace(string(b))
		if o.dsn == "" {
			return Outbox{}, errf("dsn_file %s is empty", s.DSNFile)
		}
	default:
		if hasPassword(s.DSN) {
			return Outbox{}, errf("the inline dsn carries a password (password= or sslpassword=); move it to dsn_env or dsn_file")
		}
		o.dsn = s.DSN
	}
	if _, err := pgx.ParseConfig(o.dsn); err != nil {
		// pgx quotes the connection string in its parse errors: say only that it is bad.
		return Outbox{}, errf("the connection string does not parse")
	}
	return o, nil
}

// The fleet file and a dsn_file are small; a path like /dev/zero must not fill
// the memory.
const (
	maxFleetFile = 1 << 20
	maxDSNFile   = 64 << 10
)

// keywordPassword matches password= and sslpassword= (the passphrase of the
// client's TLS key): both are secrets.
var keywordPassword = regexp.MustCompile(`(?i)(^|\s)(ssl)?password\s*=`)

// hasPassword reports whether a connection string (URL or keyword/value form)
// carries a password or a TLS key's passphrase.
func hasPassword(dsn string) bool {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return true // cannot tell: refuse rather than keep a secret inline
		}
		if _, ok := u.User.Password(); ok {
			return true
		}
		q := u.Query()
		return q.Has("password") || q.Has("sslpassword")
	}
	return keywordPassword.MatchString(dsn)
}
