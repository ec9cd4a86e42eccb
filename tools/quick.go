package tools

import (
	"bytes"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// A quickSchema accepts arguments without the general validator. Tool
// input schemas are almost always a plain object of typed properties, and
// jsonschema-go's validator, written for the whole of JSON Schema, spends
// most of a small call's time growing its goroutine's stack. compileQuick
// handles that common subset; a schema with any other keyword gets no
// quickSchema, and anything a quickSchema does not accept is given to the
// full validator, so errors and edge cases stay jsonschema-go's. The only
// property a quickSchema needs is that it never accepts what jsonschema-go
// rejects; because not and oneOf turn rejections into acceptances, the
// subset must in fact agree with jsonschema-go exactly, which
// TestQuickNeverAcceptsMore checks on random schemas.
type quickSchema struct {
	types    uint8 // jsonType bits; 0 accepts any type
	enum     []any // strings, float64s, bools and nils
	constant *any

	minimum, maximum, exclusiveMinimum, exclusiveMaximum *float64

	minLength, maxLength *int
	pattern              *regexp.Regexp

	items              *quickSchema
	minItems, maxItems *int

	properties map[string]*quickSchema
	required   []string
	additional *quickSchema

	allOf, anyOf, oneOf []*quickSchema
	not                 *quickSchema
}

const (
	typeNull uint8 = 1 << iota
	typeBoolean
	typeInteger
	typeNumber // a number with a fraction
	typeString
	typeArray
	typeObject
)

var typeBits = map[string]uint8{
	"null": typeNull, "boolean": typeBoolean, "integer": typeInteger,
	// "number" subsumes integers.
	"number": typeNumber | typeInteger, "string": typeString, "array": typeArray, "object": typeObject,
}

// quickFields are the Schema fields compileQuick understands; a schema
// with any other field set is left to jsonschema-go. Annotations that do
// not affect validation are listed too.
var quickFields = map[string]bool{
	"Schema": true, "Comment": true, "Title": true, "Description": true, "Default": true,
	"Deprecated": true, "ReadOnly": true, "WriteOnly": true, "Examples": true, "Format": true,
	"Type": true, "Types": true, "Enum": true, "Const": true,
	"Minimum": true, "Maximum": true, "ExclusiveMinimum": true, "ExclusiveMaximum": true,
	"MinLength": true, "MaxLength": true, "Pattern": true,
	"Items": true, "MinItems": true, "MaxItems": true,
	"Properties": true, "Required": true, "AdditionalProperties": true, "PropertyOrder": true,
	"AllOf": true, "AnyOf": true, "OneOf": true, "Not": true,
}

// The versions jsonschema-go validates; another $schema is its error.
var quickVersions = map[string]bool{
	"": true, "http://json-schema.org/draft-07/schema#": true,
	"https://json-schema.org/draft-07/schema#": true, "https://json-schema.org/draft/2020-12/schema": true,
}

// compileQuick returns the quick form of a schema, or nil when the schema
// uses anything outside the subset.
func compileQuick(s *jsonschema.Schema) *quickSchema {
	if s == nil || !quickVersions[s.Schema] {
		return nil
	}
	return compileQuickSub(s, 0)
}

func compileQuickSub(s *jsonschema.Schema, depth int) *quickSchema {
	if s == nil || depth > 32 || (depth > 0 && s.Schema != "") {
		return nil
	}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if !v.Field(i).IsZero() && !quickFields[v.Type().Field(i).Name] {
			return nil
		}
	}
	q := &quickSchema{
		enum: s.Enum, constant: s.Const,
		minimum: s.Minimum, maximum: s.Maximum, exclusiveMinimum: s.ExclusiveMinimum, exclusiveMaximum: s.ExclusiveMaximum,
		minLength: s.MinLength, maxLength: s.MaxLength, minItems: s.MinItems, maxItems: s.MaxItems,
		required: s.Required,
	}
	if len(s.Required) > 64 {
		return nil // more than scan's bit set holds
	}
	types := s.Types
	if s.Type == "" && s.Types != nil && len(s.Types) == 0 {
		return nil // "type": [] accepts nothing
	}
	if s.Type != "" {
		types = []string{s.Type}
	}
	for _, t := range types {
		bits, ok := typeBits[t]
		if !ok {
			return nil
		}
		q.types |= bits
	}
	for _, e := range s.Enum {
		if !quickScalar(e) {
			return nil
		}
	}
	if s.Const != nil && !quickScalar(*s.Const) {
		return nil
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil
		}
		q.pattern = re
	}
	if s.Items != nil {
		if q.items = compileQuickSub(s.Items, depth+1); q.items == nil {
			return nil
		}
	}
	if len(s.Properties) > 0 {
		q.properties = make(map[string]*quickSchema, len(s.Properties))
		for name, ps := range s.Properties {
			if q.properties[name] = compileQuickSub(ps, depth+1); q.properties[name] == nil {
				return nil
			}
		}
	}
	sub := func(s *jsonschema.Schema) *quickSchema { return compileQuickSub(s, depth+1) }
	if s.AdditionalProperties != nil {
		if q.additional = sub(s.AdditionalProperties); q.additional == nil {
			return nil
		}
	}
	if s.Not != nil {
		if q.not = sub(s.Not); q.not == nil {
			return nil
		}
	}
	for _, l := range []struct {
		from []*jsonschema.Schema
		to   *[]*quickSchema
	}{{s.AllOf, &q.allOf}, {s.AnyOf, &q.anyOf}, {s.OneOf, &q.oneOf}} {
		for _, ss := range l.from {
			qs := sub(ss)
			if qs == nil {
				return nil
			}
			*l.to = append(*l.to, qs)
		}
	}
	return q
}

func quickScalar(v any) bool {
	switch v.(type) {
	case nil, string, float64, bool:
		return true
	}
	return false
}

// accepts reports whether the JSON text data, which must be valid JSON
// (json.Valid), is valid. false means "ask the full validator", not
// "invalid". It reads the text in place, allocating nothing, and agrees
// with what jsonschema-go decides on the value encoding/json decodes from
// the same text: a string with escapes or invalid UTF-8 (which
// encoding/json would rewrite) or a number out of float64's range make the
// whole answer false, even where not or oneOf would turn a failed part
// into a success; every copy of a duplicated key is checked, where
// encoding/json keeps the last.
func (q *quickSchema) accepts(data []byte) bool {
	st := &scanState{data: data}
	end, ok := q.scan(st, skipSpace(data, 0))
	return ok && !st.unsure && skipSpace(data, end) == len(data)
}

type scanState struct {
	data   []byte
	unsure bool // the text holds something the quick path leaves to jsonschema-go
}

// scan checks the value that starts at data[i] and returns where it ends.
func (q *quickSchema) scan(st *scanState, i int) (int, bool) {
	data := st.data
	end, typ, ok := valueEnd(data, i)
	if !ok {
		return 0, false
	}
	tok := data[i:end]
	var num float64
	if typ == typeNumber {
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			st.unsure = true
			return 0, false
		}
		if _, frac := math.Modf(f); frac == 0 {
			typ = typeInteger
		}
		num = f
	}
	var str []byte
	if typ == typeString {
		str = tok[1 : len(tok)-1]
		if bytes.IndexByte(str, '\\') >= 0 || !utf8.Valid(str) {
			st.unsure = true
			return 0, false
		}
	}
	if q.types != 0 && q.types&typ == 0 {
		return 0, false
	}
	if q.enum != nil && !slices.ContainsFunc(q.enum, func(e any) bool { return scalarEqual(e, typ, tok, str, num) }) {
		return 0, false
	}
	if q.constant != nil && !scalarEqual(*q.constant, typ, tok, str, num) {
		return 0, false
	}
	if q.not != nil {
		if _, ok := q.not.scan(st, i); ok {
			return 0, false
		}
	}
	for _, s := range q.allOf {
		if _, ok := s.scan(st, i); !ok {
			return 0, false
		}
	}
	if q.anyOf != nil && !slices.ContainsFunc(q.anyOf, func(s *quickSchema) bool { _, ok := s.scan(st, i); return ok }) {
		return 0, false
	}
	if q.oneOf != nil {
		n := 0
		for _, s := range q.oneOf {
			if _, ok := s.scan(st, i); ok {
				n++
			}
		}
		if n != 1 {
			return 0, false
		}
	}
	switch typ {
	case typeNumber, typeInteger:
		if q.minimum != nil && num < *q.minimum || q.maximum != nil && num > *q.maximum ||
			q.exclusiveMinimum != nil && num <= *q.exclusiveMinimum || q.exclusiveMaximum != nil && num >= *q.exclusiveMaximum {
			return 0, false
		}
	case typeString:
		if q.minLength != nil || q.maxLength != nil {
			n := utf8.RuneCount(str)
			if q.minLength != nil && n < *q.minLength || q.maxLength != nil && n > *q.maxLength {
				return 0, false
			}
		}
		if q.pattern != nil && !q.pattern.Match(str) {
			return 0, false
		}
	case typeArray:
		n := 0
		for j := skipSpace(data, i+1); data[j] != ']'; n++ {
			var ok bool
			if q.items != nil {
				j, ok = q.items.scan(st, j)
			} else {
				j, _, ok = valueEnd(data, j)
			}
			if !ok {
				return 0, false
			}
			if j = skipSpace(data, j); data[j] == ',' {
				j = skipSpace(data, j+1)
			}
		}
		if q.minItems != nil && n < *q.minItems || q.maxItems != nil && n > *q.maxItems {
			return 0, false
		}
	case typeObject:
		var seen uint64 // bit k: required[k] is present
		for j := skipSpace(data, i+1); data[j] != '}'; {
			kend, _, _ := valueEnd(data, j)
			key := data[j+1 : kend-1]
			if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
				st.unsure = true
				return 0, false
			}
			for k, name := range q.required {
				if name == string(key) {
					seen |= 1 << k
				}
			}
			j = skipSpace(data, skipSpace(data, kend)+1) // past the colon
			var ok bool
			if ps, known := q.properties[string(key)]; known {
				j, ok = ps.scan(st, j)
			} else if q.additional != nil {
				j, ok = q.additional.scan(st, j)
			} else {
				j, _, ok = valueEnd(data, j)
			}
			if !ok {
				return 0, false
			}
			if j = skipSpace(data, j); data[j] == ',' {
				j = skipSpace(data, j+1)
			}
		}
		if seen != 1<<len(q.required)-1 {
			return 0, false
		}
	}
	return end, true
}

// scalarEqual compares an enum or const value with a scanned scalar the
// way jsonschema-go compares decoded values: numbers by value.
func scalarEqual(e any, typ uint8, tok, str []byte, num float64) bool {
	switch e := e.(type) {
	case nil:
		return typ == typeNull
	case bool:
		return typ == typeBoolean && (string(tok) == "true") == e
	case float64:
		return (typ == typeNumber || typ == typeInteger) && num == e
	case string:
		return typ == typeString && string(str) == e
	}
	return false
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns where the valid JSON value at data[i] ends, and its type
// (typeNumber for every number).
func valueEnd(data []byte, i int) (int, uint8, bool) {
	if i >= len(data) {
		return 0, 0, false
	}
	switch c := data[i]; {
	case c == '{' || c == '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					if c == '{' {
						return j + 1, typeObject, true
					}
					return j + 1, typeArray, true
				}
			case '"':
				end, _, ok := valueEnd(data, j)
				if !ok {
					return 0, 0, false
				}
				j = end - 1
			}
		}
	case c == '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1, typeString, true
			}
		}
	case c == 't':
		return i + 4, typeBoolean, true
	case c == 'f':
		return i + 5, typeBoolean, true
	case c == 'n':
		return i + 4, typeNull, true
	default:
		j := i
		for j < len(data) && strings.IndexByte("+-0123456789.eE", data[j]) >= 0 {
			j++
		}
		if j > i {
			return j, typeNumber, true
		}
	}
	return 0, 0, false
}
