package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The rows of keys.go bind every key to the field of Connector (or of one
// of its tables) that holds its value. A row's binding decodes the key,
// applies its default, runs its check and writes its effective value; the
// rules that relate keys to each other are the cross-checks of each table,
// which run after its rows.

// binding ties a key's row to where its value lives in a connector.
type binding interface {
	// typ is the TOML type the reference names.
	typ() string
	// defaultText is the default as the reference shows it, in markdown.
	defaultText() string
	// decode reads the key name of t, the table at p, into dst, a pointer
	// to the table's struct: the value written, checked, or its default.
	decode(c *checker, dst any, t map[string]any, p keyPath, name string)
	// setting returns the effective setting of the key in dst, and whether
	// the effective configuration shows it.
	setting(dst any, conn *Connector, name string) (Setting, bool)
	// tables returns the effective configuration of the tables the key
	// holds in dst: none for a key that holds a value.
	tables(dst any, conn *Connector) []Table
}

// Setting is one key of a connector's effective configuration: its value,
// defaults filled in, as a connector file would write it.
type Setting struct {
	Key string // the key as a file writes it
	// Value is the value in TOML: `"30s"`, `true`, `["a", "b"]`. It is ""
	// when the key has no value (it is optional and not set); Note then
	// says what that means, as a comment line of its own.
	Value string
	// Note says what the value means here, for a comment beside it; it
	// may be "".
	Note string
	// Env is the environment variable the value names, File the file; ""
	// when it names none. Whether they are there is for the reader of
	// the configuration to say.
	Env, File string
}

// What the value of a key names.
const (
	namesEnv  = "env"  // the name of an environment variable
	namesFile = "file" // the path of a file
)

// Table is one TOML table of a connector's effective configuration.
type Table struct {
	Header   string // "" for the top level, "[nats]", "[[streams]]", ...
	Settings []Setting
}

// Settings returns the effective configuration of c: every key it may
// set, with defaults filled in, that applies to it, in the order of the
// configuration reference. The top-level keys come first, and a table's
// keys before the tables it holds, as TOML needs.
func (c *Connector) Settings() []Table {
	return specSettings(&topSpec, c, c)
}

// specSettings returns the effective configuration of dst, the table sp
// describes, and of the tables it holds.
func specSettings(sp *spec, dst any, conn *Connector) []Table {
	own := Table{Header: sp.header}
	var below []Table
	for _, k := range sp.keys {
		if s, ok := k.bind.setting(dst, conn, k.Name); ok {
			own.Settings = append(own.Settings, s)
		}
		below = append(below, k.bind.tables(dst, conn)...)
	}
	return append([]Table{own}, below...)
}

// rows decodes t, the table at p that sp describes, into dst: it reports
// the keys sp does not allow, then decodes every key of sp in reference
// order.
func (c *checker) rows(t map[string]any, p keyPath, sp *spec, dst any) {
	c.unknown(t, p, sp)
	for _, k := range sp.keys {
		k.bind.decode(c, dst, t, p, k.Name)
	}
}

// kind is how values of the Go type V are read from decoded TOML and
// written back as TOML.
type kind[V any] struct {
	name string // the TOML type the reference names: "string", "duration", ...
	// decode reads v, the value written at p. It reports what is wrong
	// with it, and returns false when there is no value to use.
	decode func(c *checker, p keyPath, v any) (V, bool)
	// encode writes a value as TOML.
	encode func(V) string
}

// simpleKind is a kind whose decoding either gives a value or fails with
// one problem: why v is not a value.
func simpleKind[V any](name string, decode func(v any) (V, string), encode func(V) string) kind[V] {
	return kind[V]{
		name:   name,
		encode: encode,
		decode: func(c *checker, p keyPath, v any) (V, bool) {
			val, why := decode(v)
			if why != "" {
				c.report(p, "%s", why)
				return val, false
			}
			return val, true
		},
	}
}

// textKind reads a string, of any string type.
func textKind[V ~string]() kind[V] {
	return simpleKind("string", func(v any) (V, string) {
		s, ok := v.(string)
		if !ok {
			return "", "must be a string, not " + typeName(v)
		}
		return V(s), ""
	}, func(v V) string { return tomlString(string(v)) })
}

var (
	boolKind = simpleKind("boolean", func(v any) (bool, string) {
		b, ok := v.(bool)
		if !ok {
			return false, "must be true or false, not " + typeName(v)
		}
		return b, ""
	}, strconv.FormatBool)

	intKind = simpleKind("integer", func(v any) (int, string) {
		n, ok := v.(int64)
		if !ok {
			return 0, "must be a whole number, not " + typeName(v)
		}
		return int(n), ""
	}, strconv.Itoa)

	durationKind = simpleKind("duration", func(v any) (time.Duration, string) {
		s, ok := v.(string)
		if !ok {
			return 0, "must be a duration string such as \"90s\" or \"2m\", not " + typeName(v)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Sprintf("%q is not a duration; write a number and a unit (ms, s, m, h), such as \"90s\" or \"2m\"", s)
		}
		return d, ""
	}, func(d time.Duration) string { return tomlString(FormatDuration(d)) })

	sizeKind = simpleKind("size", func(v any) (int64, string) {
		switch v := v.(type) {
		case int64:
			return v, ""
		case string:
			n, err := parseSize(v)
			if err != nil {
				return 0, fmt.Sprintf("%q is not a size: %v; such as \"8MiB\"", v, err)
			}
			return n, ""
		}
		return 0, "must be a size such as \"8MiB\", not " + typeName(v)
	}, func(n int64) string { return tomlString(FormatSize(n)) })

	stringsKind = simpleKind("array of strings", decodeStrings, func(list []string) string {
		q := make([]string, len(list))
		for i, s := range list {
			q[i] = tomlString(s)
		}
		return "[" + strings.Join(q, ", ") + "]"
	})
)

// decodeStrings reads an array of strings.
func decodeStrings(v any) ([]string, string) {
	list, ok := v.([]any)
	if !ok {
		return nil, "must be an array of strings such as [\"events.>\"], not " + typeName(v)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, "must be an array of strings such as [\"events.>\"]; it holds " + typeName(e)
		}
		out = append(out, s)
	}
	return out, ""
}

// field binds a key to a value of type V held in S, the struct of the
// key's table. Built by one of the functions below and the methods that
// follow them, it reads:
//
//	text(func(n *NATS) *string { return &n.URL }).required("missing; ...").checked(checkURL)
type field[S, V any] struct {
	kind kind[V]
	get  func(*S) V
	set  func(*S, V)

	missing  string                 // the problem when the key is missing; "" when it may be
	def      func(*S, *Connector) V // the default; nil: none (the zero value stands)
	defText  string                 // the default as the reference shows it, when it is one value
	check    func(V) string         // why a value written is not allowed, or ""
	keep     bool                   // a value that fails check stays in the field
	checkDef bool                   // the default is checked too
	omitted  bool                   // an empty string is taken as the key left out

	shown func(*S, *Connector) bool // whether the effective configuration shows the key
	shows func(*S, *Connector) V    // the effective value, when it is not the field's
	note  func(*S) string           // the note of the setting
	names string                    // namesEnv or namesFile
}

// bind binds a key of kind k to a field of S through get and set.
func bind[S, V any](k kind[V], get func(*S) V, set func(*S, V)) *field[S, V] {
	return &field[S, V]{kind: k, get: get, set: set}
}

// at binds a key of kind k to the field at ptr.
func at[S, V any](k kind[V], ptr func(*S) *V) *field[S, V] {
	return bind(k, func(s *S) V { return *ptr(s) }, func(s *S, v V) { *ptr(s) = v })
}

// text binds a string key to a string field.
func text[S any, V ~string](ptr func(*S) *V) *field[S, V] { return at(textKind[V](), ptr) }

// boolean binds a boolean key to a bool field.
func boolean[S any](ptr func(*S) *bool) *field[S, bool] { return at(boolKind, ptr) }

// integer binds an integer key to an int field.
func integer[S any](ptr func(*S) *int) *field[S, int] { return at(intKind, ptr) }

// duration binds a duration key to a time.Duration field.
func duration[S any](ptr func(*S) *time.Duration) *field[S, time.Duration] {
	return at(durationKind, ptr)
}

// size binds a size key to an int64 field of bytes.
func size[S any](ptr func(*S) *int64) *field[S, int64] { return at(sizeKind, ptr) }

// required makes the key one a file must set; msg is the problem when it
// is missing.
func (f *field[S, V]) required(msg string) *field[S, V] {
	f.missing = msg
	return f
}

// byDefault sets the value the field takes when the key is absent.
func (f *field[S, V]) byDefault(v V) *field[S, V] {
	f.def = func(*S, *Connector) V { return v }
	f.defText = "`" + f.kind.encode(v) + "`"
	return f
}

// defaultFrom sets how the default is worked out when the key is absent:
// from the keys of its table above it, or from the connector's keys
// decoded before its table.
func (f *field[S, V]) defaultFrom(def func(s *S, conn *Connector) V) *field[S, V] {
	f.def = def
	return f
}

// checkingDefault checks the default too, when it is worked out from
// other keys that may not make a valid one.
func (f *field[S, V]) checkingDefault() *field[S, V] {
	f.checkDef = true
	return f
}

// checked sets the check of a value written: why it is not allowed, the
// problem's message, or "".
func (f *field[S, V]) checked(check func(V) string) *field[S, V] {
	f.check = check
	return f
}

// keptWhenInvalid keeps a value that fails its check in the field, so
// that the cross-checks judge the rest of the table by what the file
// says.
func (f *field[S, V]) keptWhenInvalid() *field[S, V] {
	f.keep = true
	return f
}

// emptyIsOmitted takes an empty string written for the key as the key
// left out: the default applies.
func (f *field[S, V]) emptyIsOmitted() *field[S, V] {
	f.omitted = true
	return f
}

// shownWhen limits the effective configuration to the connectors the key
// applies to.
func (f *field[S, V]) shownWhen(shown func(s *S, conn *Connector) bool) *field[S, V] {
	f.shown = shown
	return f
}

// showing sets the effective value, when it is not the field's own (an
// empty field that stands for a default the library applies).
func (f *field[S, V]) showing(shows func(s *S, conn *Connector) V) *field[S, V] {
	f.shows = shows
	return f
}

// noted sets the note of the effective setting.
func (f *field[S, V]) noted(note func(s *S) string) *field[S, V] {
	f.note = note
	return f
}

// naming says that the value names an environment variable (namesEnv) or
// a file (namesFile).
func (f *field[S, V]) naming(what string) *field[S, V] {
	f.names = what
	return f
}

func (f *field[S, V]) typ() string { return f.kind.name }

func (f *field[S, V]) defaultText() string {
	switch {
	case f.missing != "":
		return "required"
	case f.defText != "":
		return f.defText
	}
	return "none"
}

// decode reports a required key that is missing, and gives an absent
// key its default. It decodes a value written: one of the wrong type or
// form is reported, and the default stands in for it. It checks the value
// (and a default worked out that checkingDefault asks to check): one that
// fails is reported, and leaves the field at its zero value unless
// keptWhenInvalid says otherwise. A key with a problem is marked failed
// for the cross-checks.
func (f *field[S, V]) decode(c *checker, dst any, t map[string]any, p keyPath, name string) {
	s := dst.(*S)
	key := p.key(name)
	v, present := t[name]
	if str, ok := v.(string); ok && str == "" && f.omitted {
		present = false
	}
	var val V
	switch {
	case !present && f.missing != "":
		c.report(key, "%s", f.missing)
		c.fail(key)
		return
	case !present && f.def == nil:
		return
	case !present:
		val = f.def(s, c.conn)
		if !f.checkDef {
			f.set(s, val)
			return
		}
	default:
		var ok bool
		if val, ok = f.kind.decode(c, key, v); !ok {
			c.fail(key)
			if f.def != nil {
				f.set(s, f.def(s, c.conn))
			}
			return
		}
	}
	if f.check != nil {
		if why := f.check(val); why != "" {
			c.report(key, "%s", why)
			c.fail(key)
			if !f.keep {
				return
			}
		}
	}
	f.set(s, val)
}

func (f *field[S, V]) setting(dst any, conn *Connector, name string) (Setting, bool) {
	s := dst.(*S)
	if f.shown != nil && !f.shown(s, conn) {
		return Setting{}, false
	}
	v := f.get(s)
	if f.shows != nil {
		v = f.shows(s, conn)
	}
	st := Setting{Key: name}
	if s, ok := any(v).(string); ok {
		switch f.names {
		case namesEnv:
			st.Env = s
		case namesFile:
			st.File = s
		}
	}
	if f.note != nil {
		st.Note = f.note(s)
	}
	// An optional key without a default and without a value is not set:
	// only its note, if it has one, says what that means.
	if f.missing == "" && f.def == nil && reflect.ValueOf(&v).Elem().IsZero() {
		return st, st.Note != ""
	}
	st.Value = f.kind.encode(v)
	return st, true
}

func (f *field[S, V]) tables(any, *Connector) []Table { return nil }

// tableBind binds a TOML table to a struct field of S, of type T.
type tableBind[S, T any] struct {
	get func(*S) *T  // the field; nil when ptr is set
	ptr func(*S) **T // a field that is nil when the table is absent
	sp  *spec        // the table's keys
	// cross checks the rules that relate the table's keys, after its rows.
	cross func(c *checker, t map[string]any, p keyPath, v *T)
}

// subTable binds a table that may be absent (its keys' defaults apply) to
// the field at get.
func subTable[S, T any](get func(*S) *T, sp *spec, cross func(*checker, map[string]any, keyPath, *T)) *tableBind[S, T] {
	return &tableBind[S, T]{get: get, sp: sp, cross: cross}
}

// optionalTable binds a table whose absence means something of its own
// to the pointer field at ptr, which stays nil then.
func optionalTable[S, T any](ptr func(*S) **T, sp *spec, cross func(*checker, map[string]any, keyPath, *T)) *tableBind[S, T] {
	return &tableBind[S, T]{ptr: ptr, sp: sp, cross: cross}
}

func (b *tableBind[S, T]) typ() string { return "table" }

func (b *tableBind[S, T]) defaultText() string {
	if b.ptr != nil {
		return "none"
	}
	return "the defaults of its keys"
}

func (b *tableBind[S, T]) decode(c *checker, dst any, t map[string]any, p keyPath, name string) {
	s := dst.(*S)
	key := p.key(name)
	v, present := t[name]
	if !present && b.ptr != nil {
		return
	}
	m, ok := v.(map[string]any)
	switch {
	case !present:
		m = map[string]any{}
	case !ok:
		c.report(key, "must be a table, not %s; write the keys under a %s header", typeName(v), b.sp.header)
		c.fail(key)
		return
	}
	var val *T
	if b.ptr != nil {
		val = new(T)
		*b.ptr(s) = val
	} else {
		val = b.get(s)
	}
	c.rows(m, key, b.sp, val)
	if b.cross != nil {
		b.cross(c, m, key, val)
	}
}

func (b *tableBind[S, T]) setting(any, *Connector, string) (Setting, bool) { return Setting{}, false }

func (b *tableBind[S, T]) tables(dst any, conn *Connector) []Table {
	s := dst.(*S)
	var val *T
	if b.ptr != nil {
		val = *b.ptr(s)
	} else {
		val = b.get(s)
	}
	if val == nil {
		return nil
	}
	return specSettings(b.sp, val, conn)
}

// tableList binds an array of tables to a slice field of S, of T.
type tableList[S, T any] struct {
	get      func(*S) *[]T
	sp       *spec
	what     string // what one entry describes: "stream"
	required string // the problem when the key is missing; "" when it may be
	empty    string // the problem when the array is empty; "" when it may be
	// keepInvalid keeps entries with a problem in the list; otherwise they
	// are left out, so that later checks do not look them up.
	keepInvalid bool
	// cross checks the rules that relate the keys of entry e, the table t
	// at p, after its rows, and its relation to the entries before it:
	// earlier[i] is the (i+1)-th entry, the zero T where it is not a table.
	cross func(c *checker, t map[string]any, p keyPath, e *T, earlier []T)
}

func (b *tableList[S, T]) typ() string { return "array of tables" }

func (b *tableList[S, T]) defaultText() string {
	if b.required != "" {
		return "required"
	}
	return "none"
}

func (b *tableList[S, T]) decode(c *checker, dst any, t map[string]any, p keyPath, name string) {
	s := dst.(*S)
	key := p.key(name)
	v, present := t[name]
	if !present {
		if b.required != "" {
			c.report(key, "%s", b.required)
		}
		return
	}
	var tables []map[string]any // nil where an entry is not a table
	switch v := v.(type) {
	case []map[string]any:
		tables = v
	case []any:
		for i, e := range v {
			m, ok := e.(map[string]any)
			if !ok {
				c.report(key.index(i+1), "must be a table, not %s", typeName(e))
			}
			tables = append(tables, m)
		}
	default:
		c.report(key, "must be an array of tables, not %s; write a %s header for each %s", typeName(v), b.sp.header, b.what)
		c.fail(key)
		return
	}
	if len(tables) == 0 && b.empty != "" {
		c.report(key, "%s", b.empty)
		return
	}
	all := make([]T, len(tables))
	var out []T
	for i, m := range tables {
		if m == nil {
			continue
		}
		ep := key.index(i + 1)
		c.rows(m, ep, b.sp, &all[i])
		if b.cross != nil {
			b.cross(c, m, ep, &all[i], all[:i])
		}
		if b.keepInvalid || c.clean(ep) {
			out = append(out, all[i])
		}
	}
	*b.get(s) = out
}

func (b *tableList[S, T]) setting(any, *Connector, string) (Setting, bool) { return Setting{}, false }

func (b *tableList[S, T]) tables(dst any, conn *Connector) []Table {
	var out []Table
	list := *b.get(dst.(*S))
	for i := range list {
		out = append(out, specSettings(b.sp, &list[i], conn)...)
	}
	return out
}

// The checks below are shared by rows: each returns the problem's
// message, or "".

// optional lets check pass the empty string: the key written empty is
// the key left out.
func optional(check func(string) string) func(string) string {
	return func(s string) string {
		if s == "" {
			return ""
		}
		return check(s)
	}
}

// quotedWhy turns a check that says why a value is wrong, worded to
// follow it, into one whose message starts with the value: "%q why".
func quotedWhy(check func(string) string) func(string) string {
	return func(s string) string {
		if why := check(s); why != "" {
			return fmt.Sprintf("%q %s", s, why)
		}
		return ""
	}
}

// moreThanZero is the check of a duration that must be more than 0; eg is
// an example.
func moreThanZero(eg string) func(time.Duration) string {
	return func(d time.Duration) string {
		if d <= 0 {
			return "must be more than 0, such as \"" + eg + "\""
		}
		return ""
	}
}

// atLeast is the check of a duration that must be at least least.
func atLeast(least time.Duration) func(time.Duration) string {
	return func(d time.Duration) string {
		if d < least {
			return fmt.Sprintf("%s is less than the minimum of %s", FormatDuration(d), FormatDuration(least))
		}
		return ""
	}
}

// inRange is the check of an integer from lo to hi; what says what the
// allowed values are when it is not "lo to hi".
func inRange(lo, hi int, what string) func(int) string {
	if what == "" {
		what = fmt.Sprintf("%d to %d", lo, hi)
	}
	return func(n int) string {
		if n < lo || n > hi {
			return fmt.Sprintf("%d is out of range; allowed: %s", n, what)
		}
		return ""
	}
}

// oneOf is the check of a string that must be one of allowed; msg is the
// problem, after the value quoted.
func oneOf[V ~string](msg string, allowed ...V) func(V) string {
	return func(v V) string {
		if !slices.Contains(allowed, v) {
			return fmt.Sprintf("%q %s", string(v), msg)
		}
		return ""
	}
}

// sizeRange is the check of a size from lo to hi bytes.
func sizeRange(lo, hi int64) func(int64) string {
	return func(n int64) string {
		if n < lo || n > hi {
			return fmt.Sprintf("%s is out of range; allowed: %s to %s", FormatSize(n), FormatSize(lo), FormatSize(hi))
		}
		return ""
	}
}

// tooShort is the check of a duration of at least least; why says why,
// after the duration.
func tooShort(least time.Duration, why string) func(time.Duration) string {
	return func(d time.Duration) string {
		if d < least {
			return fmt.Sprintf("%s is too short: %s", d, why)
		}
		return ""
	}
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
