package cases

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// decoder reads one case field by field, so that one wrong value does not
// hide the others: every type error and unknown field of the case is
// reported, each named by its path ("remediation[1].text").
type decoder struct {
	caseID string
	probs  []Problem
}

var (
	textType     = reflect.TypeFor[Text]()
	durationType = reflect.TypeFor[Duration]()
	stepType     = reflect.TypeFor[Step]()
	unmarshaler  = reflect.TypeFor[json.Unmarshaler]()
)

// decodeLenient decodes a case object, reporting every problem it finds:
// data is the case's JSON, obj what json.Unmarshal made of it and err what
// that returned (the caller has reported a syntax error already). It
// returns nil when data is not an object at all.
func decodeLenient(data []byte, obj map[string]json.RawMessage, err error) (*Case, []Problem) {
	if err != nil || obj == nil {
		return nil, []Problem{{Severity: Error, Msg: fmt.Sprintf("is a JSON %s, want a case object {\"id\": ..., \"title\": ...}", jsonKind(data))}}
	}
	d := &decoder{}
	var f caseFields
	v := reflect.ValueOf(&f).Elem()
	if raw, ok := obj["id"]; ok {
		var id string
		if json.Unmarshal(raw, &id) == nil {
			d.caseID = id
		}
	}
	extra := map[string]json.RawMessage{}
	for _, key := range slices.Sorted(maps.Keys(obj)) {
		fv, ok := fieldByTag(v, key)
		if !ok {
			extra[key] = obj[key]
			d.unknown(key, key, knownFieldNames)
			continue
		}
		d.value(key, obj[key], fv)
	}
	c := Case(f)
	if len(extra) > 0 {
		c.Extra = extra
	}
	return &c, d.probs
}

// knownFieldNames are the case's fields in the format's order, for
// suggestions.
var knownFieldNames = func() []string {
	var names []string
	t := reflect.TypeFor[caseFields]()
	for i := range t.NumField() {
		if name := jsonName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	return names
}()

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	if name == "" {
		return f.Name
	}
	return name
}

func fieldByTag(v reflect.Value, key string) (reflect.Value, bool) {
	t := v.Type()
	for i := range t.NumField() {
		if jsonName(t.Field(i)) == key {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		if name := jsonName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	return names
}

func (d *decoder) add(sev Severity, path, format string, args ...any) {
	d.probs = append(d.probs, Problem{Severity: sev, CaseID: d.caseID, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) unknown(path, key string, known []string) {
	if s := suggest(key, known); s != "" {
		d.add(Warning, path, "unknown field: did you mean %q? incidentbot does not read %q", s, key)
		return
	}
	d.add(Warning, path, "unknown field: incidentbot does not read it (known fields here: %s)", strings.Join(known, ", "))
}

// value decodes raw into v, which is addressable, naming problems by path.
func (d *decoder) value(path string, raw json.RawMessage, v reflect.Value) {
	t := v.Type()
	isNull := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	switch {
	case t == textType:
		if k := jsonKind(raw); k == "object" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) == nil {
				for _, key := range slices.Sorted(maps.Keys(obj)) {
					if key != "en" && key != "ko" {
						d.unknown(path+"."+key, key, []string{"en", "ko"})
					}
				}
			}
		}
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			d.add(Error, path, "is a JSON %s, want text: a string, or {en: \"...\", ko: \"...\"}", innerKind(raw, err))
		}
	case t == stepType && jsonKind(raw) == "string":
		// A step written as a plain string: "- restart the pods".
		var s string
		_ = json.Unmarshal(raw, &s)
		v.Set(reflect.ValueOf(Step{Text: PlainText(s)}))
	case t == durationType:
		_ = json.Unmarshal(raw, v.Addr().Interface()) // Validate reports a bad duration
	case t.Kind() == reflect.Pointer:
		if isNull {
			v.SetZero()
			return
		}
		p := reflect.New(t.Elem())
		d.value(path, raw, p.Elem())
		v.Set(p)
	case t.Kind() == reflect.Slice:
		if isNull {
			v.SetZero()
			return
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			d.add(Error, path, "is a JSON %s, want a list", jsonKind(raw))
			return
		}
		s := reflect.MakeSlice(t, 0, len(elems))
		for i, e := range elems {
			ev := reflect.New(t.Elem()).Elem()
			d.value(fmt.Sprintf("%s[%d]", path, i), e, ev)
			s = reflect.Append(s, ev)
		}
		v.Set(s)
	case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(unmarshaler):
		if isNull {
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			d.add(Error, path, "is a JSON %s, want an object with %s", jsonKind(raw), strings.Join(fieldNames(t), ", "))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			fv, ok := fieldByTag(v, key)
			if !ok {
				d.unknown(path+"."+key, key, fieldNames(t))
				continue
			}
			d.value(path+"."+key, obj[key], fv)
		}
	default:
		if err := json.Unmarshal(raw, v.Addr().Interface()); err != nil {
			d.add(Error, path, "is a JSON %s, want %s", jsonKind(raw), describeType(t.String()))
		}
	}
}

// jsonKind names the kind of a JSON value by its first character.
func jsonKind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "list"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// innerKind names the JSON kind that failed to decode, looking inside an
// object when the error is about one of its values.
func innerKind(raw []byte, err error) string {
	var typ *json.UnmarshalTypeError
	if jsonKind(raw) == "object" && errors.As(err, &typ) {
		return typ.Value + " in " + typ.Field
	}
	return jsonKind(raw)
}

// UnmarshalJSON reads text written as {"en": ..., "ko": ...} or as a plain
// string, which is taken as Korean when it has Hangul and as English
// otherwise.
func (t *Text) UnmarshalJSON(data []byte) error {
	// An object is never a string: most texts are objects, and trying
	// one as a string first costs a failed decode.
	if b := bytes.TrimLeft(data, " \t\r\n"); len(b) == 0 || b[0] != '{' {
		var s string
		if json.Unmarshal(data, &s) == nil {
			*t = PlainText(s)
			return nil
		}
	}
	type text Text
	var tt text
	if err := json.Unmarshal(data, &tt); err != nil {
		return err
	}
	*t = Text(tt)
	return nil
}

// PlainText makes text of a string in one language: Korean when it has
// Hangul, English otherwise.
func PlainText(s string) Text {
	if HasHangul(s) {
		return Text{Ko: s}
	}
	return Text{En: s}
}

// HasHangul reports whether s has any Hangul letter.
func HasHangul(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Hangul, r) }) >= 0
}

// suggest returns the name in known closest to s, or "" when none is close
// enough to be what was meant.
func suggest(s string, known []string) string {
	best, bestD := "", 1<<30
	ls := strings.ToLower(s)
	for _, k := range known {
		d := editDistance(ls, k)
		if d < bestD {
			best, bestD = k, d
		}
	}
	limit := max(2, len(s)/3)
	if bestD <= limit {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, by bytes (field
// names are ASCII).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
