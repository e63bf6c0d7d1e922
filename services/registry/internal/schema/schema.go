// Package schema compiles the JSON Schemas a tool carries (input_schema,
// output_schema) with a maintained validator, so a schema a model will be
// handed is known to be one before it is stored.
package schema

import (
	"errors"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// location is where the compiled document is said to live. Relative $refs
// resolve against it, and so stay inside the document.
const location = "urn:switchboard:schema"

// Check compiles text, a JSON Schema as JSON text, under draft 2020-12
// unless the schema names another draft in $schema. It returns nil when the
// schema compiles, or the compiler's reason in one line.
//
// A schema must be self-contained: the standard metaschemas resolve, but
// nothing is fetched from the network or read from disk (the validator's
// default loader reads file: URLs, which would let an advertiser probe the
// registry's filesystem).
func Check(text string) error {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return errors.New(oneLine(err.Error()))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(location, doc); err != nil {
		return errors.New(oneLine(err.Error()))
	}
	if _, err := c.Compile(location); err != nil {
		return errors.New(reason(err))
	}
	return nil
}

// noLoader refuses every reference that leaves the document.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("schemas must be self-contained: the registry fetches no $ref or $schema from elsewhere")
}

// reason turns a compile error into one line. A schema that fails its
// metaschema yields a tree of causes; its first leaf names the keyword at
// fault, which is the part a person can act on.
func reason(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			return oneLine(ve.Error())
		}
	}
	return oneLine(strings.ReplaceAll(err.Error(), location+"#", "#"))
}

// oneLine joins the lines of a multi-line message (the validator indents
// causes as "- " items) so it stays one sentence.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "- ")
	}
	return strings.Join(lines, "; ")
}
