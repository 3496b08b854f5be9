package exec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// checkKeys reads the JSON value that decodes into a t (nil: unknown) and refuses what
// encoding/json lets through: a key given twice, of which it keeps the last (a server listed
// busy, then idle, would read idle), and a field in a case other than the documented one
// ("JOBS" would read as "jobs", and so hide a duplicate). Run it only on output that decoded.
func checkKeys(dec *json.Decoder, t reflect.Type) error {
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
				if !ok {
					return fmt.Errorf("unknown field %s", errtext.Quote(key))
				}
				next = ft
			}
			if err := checkKeys(dec, next); err != nil {
				return err
			}
		}
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Slice {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkKeys(dec, elem); err != nil {
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

// jsonFields adds to fields the JSON names of struct t's fields, with their types; an
// embedded struct without a tag (Needs) gives its own.
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
