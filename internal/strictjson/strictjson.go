// Package strictjson decodes JSON from outside rota (a program's output, an API request, an
// Alertmanager webhook) and refuses what encoding/json lets through in silence: a key given
// twice, of which it keeps the last (a server listed busy, then idle, would read idle), a field
// in a case other than its own ("JOBS" reads as "jobs", and so hides a duplicate), and data
// after the value.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// Unknown says what Decode does with an object key that is no field of the struct it decodes
// into.
type Unknown bool

const (
	// RefuseUnknown refuses it: a misspelt field would otherwise be dropped.
	RefuseUnknown Unknown = false
	// IgnoreUnknown skips it: the sender may add fields in later versions (Alertmanager).
	IgnoreUnknown Unknown = true
)

// Decode decodes the one JSON value b holds into v. An empty b is io.EOF, unwrapped. The
// errors quote the input cut short.
func Decode(b []byte, v any, unknown Unknown) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if unknown == RefuseUnknown {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); errors.Is(err, io.EOF) {
		return io.EOF
	} else if err != nil {
		return errors.New(errtext.Of(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	return checkKeys(json.NewDecoder(bytes.NewReader(b)), reflect.TypeOf(v), unknown)
}

// checkKeys reads the JSON value that decoded into a t (nil: a value Decode does not keep)
// and refuses a key given twice and a field in another case.
func checkKeys(dec *json.Decoder, t reflect.Type, unknown Unknown) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case t != nil && t.Kind() == reflect.Struct:
			fields = jsonFields(t, map[string]reflect.Type{})
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := tok.(string)
			if seen[key] {
				return fmt.Errorf("%s given twice", errtext.Quote(key))
			}
			seen[key] = true
			next := elem
			if fields != nil {
				ft, ok := fields[key]
				if !ok && (unknown == RefuseUnknown || foldsInto(key, fields)) {
					return fmt.Errorf("unknown field %s", errtext.Quote(key))
				}
				next = ft
			}
			if err := checkKeys(dec, next, unknown); err != nil {
				return err
			}
		}
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkKeys(dec, elem, unknown); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return err
	}
	return nil
}

// foldsInto says whether key names one of fields in another case: encoding/json would decode
// it into that field.
func foldsInto(key string, fields map[string]reflect.Type) bool {
	for f := range fields {
		if strings.EqualFold(f, key) {
			return true
		}
	}
	return false
}

// jsonFields adds to fields the JSON names of struct t's fields, with their types; an
// embedded struct without a tag gives its own.
func jsonFields(t reflect.Type, fields map[string]reflect.Type) map[string]reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			jsonFields(f.Type, fields)
		case !f.IsExported() || tag == "-":
		case tag != "":
			fields[tag] = f.Type
		default:
			fields[f.Name] = f.Type
		}
	}
	return fields
}
