package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/rotahq/rota/internal/errtext"
)

// decodeChecked decodes doc (a YAML document's mapping) into c, reporting what cannot be
// decoded (an unknown key, a key given twice, a value of the wrong kind: `window: 10 minutes`)
// as problems with their path and line instead of stopping at the first; each such key is left
// out, so it keeps its default and the rest of the file is still read and validated.
func decodeChecked(doc *yaml.Node, c *Config, p *problems) error {
	w := newWalker(p)
	if !w.walk(doc, reflect.TypeFor[Config](), "") {
		return nil
	}
	// What is left decodes: every key is known (the values of types that decode themselves were
	// checked strictly, one by one).
	if err := doc.Decode(c); err != nil {
		return fmt.Errorf("parsing config: %s", cleanYAMLError(err))
	}
	return nil
}

// lineOf is the line of path (pools[1].nodes[3].bmc.host) in doc, or of the nearest key above
// it that doc has (0: none).
func lineOf(doc *yaml.Node, path string) int {
	line, _ := lookup(doc, path)
	return line
}

// given reports whether doc sets path (pools[1].boot_timeout), to any value.
func given(doc *yaml.Node, path string) bool {
	_, found := lookup(doc, path)
	return found
}

// lookup follows path in doc as far as doc has it: the line of the deepest key found, and
// whether the whole path was.
func lookup(doc *yaml.Node, path string) (int, bool) {
	line, n := 0, doc
	for path != "" && n != nil {
		var key string
		index := -1
		switch {
		case path[0] == '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return line, false
			}
			fmt.Sscanf(path[1:end], "%d", &index)
			path = strings.TrimPrefix(path[end+1:], ".")
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			key, path = path[:end], strings.TrimPrefix(path[end:], ".")
		}
		n = child(n, key, index)
		if n != nil {
			line = n.Line
		}
	}
	return line, n != nil
}

// child is the value of key in mapping n, or item index of sequence n (nil: none).
func child(n *yaml.Node, key string, index int) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case index >= 0 && n.Kind == yaml.SequenceNode && index < len(n.Content):
		return n.Content[index]
	case index < 0 && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				return n.Content[i+1]
			}
		}
	}
	return nil
}

// walker checks a YAML tree against the Go type it is to be decoded into.
type walker struct {
	p      *problems
	fields map[reflect.Type]map[string]reflect.Type // yaml name -> field type, per struct type
	// walked holds the anchored nodes already checked (and pruned) as a type: an alias of one
	// is not walked again, so aliases of aliases cost what the file's text does.
	walked map[anchorUse]bool
	// merging holds the mappings whose merge keys are being resolved: one that merges itself
	// (`&a {<<: *a}`) is a problem, not an endless loop.
	merging map[*yaml.Node]bool
	// values counts the nodes checked: what the walk cost.
	values int
}

// newWalker is a walker that reports to p.
func newWalker(p *problems) *walker {
	return &walker{p: p, fields: map[reflect.Type]map[string]reflect.Type{}, walked: map[anchorUse]bool{}, merging: map[*yaml.Node]bool{}}
}

// anchorUse is an anchored node checked as a type.
type anchorUse struct {
	n *yaml.Node
	t reflect.Type
}

var (
	durationType = reflect.TypeFor[model.Duration]()
	bytesType    = reflect.TypeFor[Bytes]()
	v3Unmarshal  = reflect.TypeFor[yaml.Unmarshaler]()
	v2Unmarshal  = reflect.TypeFor[interface {
		UnmarshalYAML(func(any) error) error
	}]()
)

// walk checks n against t at path, dropping from mappings the pairs that cannot be decoded
// (and putting in place of a list item that cannot one that decodes to the zero value, so the
// indices and lines in later problems stay those of the file). It returns false when n itself
// cannot go into t: the caller drops it.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case n.Kind == yaml.AliasNode:
		// The anchored value is checked (and pruned) where it is first used as t; an alias of
		// it used as t again is not walked again, or aliases of aliases (a list of N aliases of
		// a list of N aliases of ...) would cost N^depth. yaml.v3's decode afterwards refuses
		// excessive aliasing itself. (A value a merge key brought is an alias too: see merge.)
		return w.once(n.Alias, t, path)
	case n.Anchor == "":
		return w.value(n, t, path)
	}
	return w.once(n, t, path)
}

// once is value for a node that may be used more than once (anchored, or aliased), checked
// once as each type.
func (w *walker) once(n *yaml.Node, t reflect.Type, path string) bool {
	use := anchorUse{n, t}
	if w.walked[use] {
		return true
	}
	ok := w.value(n, t, path)
	w.walked[use] = ok // a value that cannot be read is not remembered: each use is a problem
	return ok
}

// value is walk for a node that is no alias.
func (w *walker) value(n *yaml.Node, t reflect.Type, path string) bool {
	w.values++
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return true // null decodes into anything: the zero value
	}
	if reflect.PointerTo(t).Implements(v3Unmarshal) || reflect.PointerTo(t).Implements(v2Unmarshal) {
		return w.leaf(n, t, path)
	}
	if n.Kind == yaml.MappingNode {
		w.merge(n, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		fields := w.structFields(t)
		w.required(n, t, path)
		return w.mapping(n, path, func(key string) (reflect.Type, bool) { ft, ok := fields[key]; return ft, ok })
	case reflect.Map:
		return w.mapping(n, path, func(string) (reflect.Type, bool) { return t.Elem(), true })
	case reflect.String:
		if n.Kind == yaml.ScalarNode {
			return true // any single value reads as a string
		}
	case reflect.Slice:
		return w.list(n, t, path)
	case reflect.Float32, reflect.Float64:
		return w.decimal(n, path) && w.leaf(n, t, path) && w.finite(n, path)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		// A count past maxNumber would overflow the sums over a fleet (cpu_cores: 2^62 on two
		// servers); a size in bytes may pass it (2 TiB of memory written as a number).
		return w.decimal(n, path) && w.leaf(n, t, path) && w.whole(n, path) && (t == bytesType || w.finite(n, path))
	}
	return w.leaf(n, t, path)
}

// merge resolves mapping n's merge keys (`<<: *defaults`, `<<: [*a, *b]`), as YAML means
// them and yaml.v3 would while decoding: n gets each key its sources have and it does not set
// itself (an earlier source winning over a later), and loses the merge keys. The walk then
// checks the keys n has, wherever they were written (before, `<<` was an unknown key). Each
// value brought is put in as an alias of the source's, so the walk checks it once however
// many mappings merge it, and yaml.v3's decode counts it as the aliasing it is. A source is
// resolved in place before it is read.
func (w *walker) merge(n *yaml.Node, path string) {
	if !slices.ContainsFunc(n.Content, isMergeKey) {
		return
	}
	if w.merging[n] {
		w.add(joinPath(path, "<<"), n.Line, "merges the mapping it is in")
		return
	}
	w.merging[n] = true
	defer delete(w.merging, n)
	var own, brought []*yaml.Node
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isMergeKey(k) {
			own = append(own, k, v)
			set[k.Value] = true
			continue
		}
		sources := []*yaml.Node{v}
		if deref(v).Kind == yaml.SequenceNode {
			sources = deref(v).Content
		}
		for _, src := range sources {
			if src = deref(src); src.Kind != yaml.MappingNode {
				w.add(joinPath(path, "<<"), k.Line, "merges a mapping (<<: *defaults) or a list of them")
				continue
			}
			w.merge(src, path)
			brought = append(brought, src.Content...)
		}
	}
	for i := 0; i+1 < len(brought); i += 2 {
		k, v := brought[i], brought[i+1]
		if set[k.Value] || isMergeKey(k) { // a merge key is brought by a source that merges n
			continue
		}
		set[k.Value] = true
		if v.Kind != yaml.AliasNode {
			v = &yaml.Node{Kind: yaml.AliasNode, Alias: v, Line: v.Line, Column: v.Column}
		}
		own = append(own, k, v)
	}
	n.Content = own
}

// isMergeKey reports whether n is the merge key, a plain `<<`.
func isMergeKey(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!merge" }

// deref is n, or the node alias n stands for.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

// list checks each item of a list. An item that cannot be read, or is empty (`- ~`, a bare
// `-`), is a problem, and is replaced by one that decodes to the zero value: yaml.v3 leaves a
// null item of a list of structs or strings out, which would move every later item up one
// index and hang their problems on the wrong item and line.
func (w *walker) list(n *yaml.Node, t reflect.Type, path string) bool {
	if n.Kind != yaml.SequenceNode {
		w.add(path, n.Line, "must be a list")
		return false
	}
	for i, item := range n.Content {
		ipath := path + "[" + strconv.Itoa(i) + "]"
		switch {
		case isNull(item):
			w.add(ipath, item.Line, "is empty")
		case w.walk(item, t.Elem(), ipath):
			continue
		}
		n.Content[i] = zeroNode(t.Elem(), item.Line)
	}
	return true
}

// isNull reports whether n is null (`~`, `null`, nothing), itself or through an alias.
func isNull(n *yaml.Node) bool {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// zeroNode is a node at line that decodes into t's zero value.
func zeroNode(t reflect.Type, line int) *yaml.Node {
	n := &yaml.Node{Line: line}
	custom := reflect.PointerTo(t).Implements(v3Unmarshal) || reflect.PointerTo(t).Implements(v2Unmarshal)
	switch {
	case t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface:
		n.Kind, n.Tag = yaml.ScalarNode, "!!null"
	case !custom && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		n.Kind, n.Tag = yaml.MappingNode, "!!map"
	case !custom && t.Kind() == reflect.Slice:
		n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
	default:
		if err := n.Encode(reflect.Zero(t).Interface()); err != nil {
			n.Kind, n.Tag = yaml.ScalarNode, "!!null"
		}
		n.Line = line
	}
	return n
}

// maxNumber bounds every number of the config: far beyond any price, power, factor or
// intensity rota takes (a server at 10^12 a hour in any currency), and small enough that the
// books' sums of such numbers over centuries and fleets stay finite and exact to the cent.
const maxNumber = 1e12

// finite refuses .nan and .inf for a number (n decoded as one): no key of the config takes
// them, and a NaN passes every comparison a range check makes with it the wrong way round. A
// finite number beyond maxNumber is refused too: `hourly: 1e308` would make the books'
// sums infinite, which the store cannot keep.
func (w *walker) finite(n *yaml.Node, path string) bool {
	var f float64
	if n.Kind != yaml.ScalarNode || n.Decode(&f) != nil {
		return true
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		w.add(path, n.Line, "%s is not a finite number", errtext.Quote(n.Value))
	case math.Abs(f) > maxNumber:
		w.add(path, n.Line, "%s is beyond %g, the largest number a key takes", errtext.Quote(n.Value), float64(maxNumber))
	default:
		return true
	}
	return false
}

// leadingZero is a whole number with a leading zero (0623, -010).
var leadingZero = regexp.MustCompile(`^[-+]?0[0-9_]+$`)

// decimal refuses a number written with a leading zero that yaml.v3 reads as octal, as YAML
// 1.1 did, where YAML 1.2 and the reader mean decimal: port: 0623 was port 403.
func (w *walker) decimal(n *yaml.Node, path string) bool {
	var i int64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || !leadingZero.MatchString(n.Value) || n.Decode(&i) != nil {
		return true
	}
	w.add(path, n.Line, "%s is octal to YAML (%d): write it without the leading zero, or %O for octal", errtext.Quote(n.Value), i, i)
	return false
}

// whole refuses a fraction for a whole number (n decoded as one): yaml.v3 would cut 1.5 to 1,
// and 0.9 to 0 (backlog.queued_jobs: 0.9 would mean "spill at once").
func (w *walker) whole(n *yaml.Node, path string) bool {
	var f float64
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!float" || n.Decode(&f) != nil || f == math.Trunc(f) {
		return true
	}
	w.add(path, n.Line, "%s is not a whole number", errtext.Quote(n.Value))
	return false
}

// mapping checks a mapping whose keys are typed by field (false: no such key).
func (w *walker) mapping(n *yaml.Node, path string, field func(string) (reflect.Type, bool)) bool {
	if n.Kind != yaml.MappingNode {
		w.add(path, n.Line, "must be a mapping (key: value)")
		return false
	}
	first := map[string]int{}
	kept := make([]*yaml.Node, 0, len(n.Content))
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		kpath := joinPath(path, k.Value)
		ft, known := field(k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			w.add(path, k.Line, "a key must be a plain name")
			continue
		case !known:
			w.add(kpath, k.Line, "unknown key")
			continue
		case first[k.Value] != 0:
			w.add(kpath, k.Line, "given twice (first on line %d)", first[k.Value])
			continue
		}
		first[k.Value] = k.Line
		if w.walk(v, ft, kpath) {
			kept = append(kept, k, v)
		}
	}
	n.Content = kept
	return true
}

// leaf decodes n into a new value of t; what fails is a problem, said in words of the type.
// A single value decodes as it is; a mapping or list (a type that decodes itself, such as
// prometheus/common's HTTP client config) strictly, refusing unknown keys.
func (w *walker) leaf(n *yaml.Node, t reflect.Type, path string) bool {
	var err error
	if n.Kind == yaml.ScalarNode {
		err = n.Decode(reflect.New(t).Interface())
	} else {
		err = decodeStrict(n, reflect.New(t).Interface())
	}
	if err == nil {
		return true
	}
	w.add(path, n.Line, "%s", leafMessage(n, t, err))
	return false
}

func leafMessage(n *yaml.Node, t reflect.Type, err error) string {
	if n.Kind == yaml.ScalarNode {
		v := errtext.Quote(n.Value)
		number := t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64
		switch {
		case number && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 &&
			(&yaml.Node{Kind: yaml.ScalarNode, Value: n.Value}).Decode(reflect.New(t).Interface()) == nil:
			return v + " is quoted, so YAML reads it as text: write the number without quotes"
		case t == durationType:
			return v + " is not a duration (a number and a unit, no sign or spaces: 30s, 10m, 1h30m)"
		case t == bytesType:
			return v + " is not a size (a number of bytes, or with a unit: 512GiB, 80GB)"
		case t.Kind() == reflect.Bool:
			return v + " is not true or false"
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
			return v + " is not a whole number"
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			return v + " is not a number"
		}
	}
	switch {
	case n.Kind == yaml.SequenceNode && t.Kind() != reflect.Slice:
		return "must be a single value or a mapping, not a list"
	case n.Kind == yaml.MappingNode && t.Kind() != reflect.Struct:
		return "must be a single value, not a mapping"
	}
	return cleanYAMLError(err)
}

// required reports each field of t tagged `required:"true"` that the mapping n leaves out:
// one whose zero value is a setting of its own (a quota's max_servers: 0), so leaving it out
// must not choose that.
func (w *walker) required(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Tag.Get("required") == "true" && child(n, name, -1) == nil {
			w.add(joinPath(path, name), n.Line, "required")
		}
	}
}

// structFields maps t's yaml field names to their types (exported fields only).
func (w *walker) structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := w.fields[t]; ok {
		return m
	}
	m := map[string]reflect.Type{}
	addFields(m, t)
	w.fields[t] = m
	return m
}

// addFields adds t's yaml field names to m, those of inline structs as their own (as yaml.v3
// decodes them).
func addFields(m map[string]reflect.Type, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported():
		case name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			addFields(m, f.Type)
		case name != "":
			m[name] = f.Type
		}
	}
}

func joinPath(path, key string) string {
	key = errtext.Cut(key, errtext.Max)
	if path == "" {
		return key
	}
	return path + "." + key
}

func (w *walker) add(path string, line int, format string, args ...any) {
	w.p.add(path, format, args...)
	(*w.p)[len(*w.p)-1].Line = line
}

// decodeStrict decodes n into out refusing unknown fields: yaml.v3's Node.Decode cannot, so n
// goes through its text. Line numbers in the error are those of that text; cleanYAMLError
// drops them.
func decodeStrict(n *yaml.Node, out any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(out)
}

var yamlLine = regexp.MustCompile(`(yaml: )?(unmarshal errors:\s*)?line \d+: `)

// cleanYAMLError is err's message without yaml's prefixes and line numbers, cut short.
func cleanYAMLError(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(yamlLine.ReplaceAllString(l, "")); l != "" && l != "yaml: unmarshal errors:" {
			parts = append(parts, l)
		}
	}
	return errtext.Cut(strings.Join(parts, "; "), 4*errtext.Max)
}

// errNotMapping is a document that is not a mapping of keys at its top.
var errNotMapping = errors.New("parsing config: the file must be a mapping of keys (prometheus:, pools:, ...)")
