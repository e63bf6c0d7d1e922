package serverjson

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// resolver fills an entry's inputs from what the user set, the entry's
// own values and defaults.
type resolver struct {
	server string
	values map[string]string
	used   map[string]bool
}

// missingError is a required value nobody set: the way to run is right,
// and the user must set it.
type missingError struct{ sentence string }

func (e *missingError) Error() string { return e.sentence }

// set is what the user set under one of names.
func (r *resolver) set(names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := r.values[n]; ok && n != "" {
			r.used[n] = true
			return v, true
		}
	}
	return "", false
}

// value resolves one input: the user's, else the entry's value (its
// {variables} filled), else its default. ok is false when it has none and
// is optional. shown is v as a summary shows it: "***" for a secret, and
// for each secret variable in it. A required input without a value is a
// missingError naming how to set it; the sentence never holds a value.
func (r *resolver) value(kind, label string, names []string, in Input, vars map[string]Input) (v, shown string, ok bool, err error) {
	v, ok = r.set(names...)
	shown = v
	switch {
	case ok:
	case in.Value != "":
		if v, shown, err = r.template(in.Value, vars); err != nil {
			return "", "", false, err
		}
	case in.Default != "":
		v, shown = in.Default, in.Default
	case in.IsRequired:
		what := ""
		if in.Description != "" {
			what = " (" + in.Description + ")"
		}
		secret := ""
		if in.IsSecret {
			secret = " secret"
		}
		return "", "", false, &missingError{fmt.Sprintf("server %q needs the%s %s %q%s: set it with --set %s=…", r.server, secret, kind, label, what, names[0])}
	default:
		return "", "", false, nil
	}
	if len(in.Choices) > 0 && !slices.Contains(in.Choices, v) {
		shown := fmt.Sprintf("%q", v)
		if in.IsSecret {
			shown = "the value given"
		}
		return "", "", false, fmt.Errorf("%s %q takes one of %s, not %s", kind, label, strings.Join(in.Choices, ", "), shown)
	}
	if in.IsSecret {
		shown = "***"
	}
	return v, shown, true, nil
}

var variable = regexp.MustCompile(`\{([A-Za-z0-9_.-]+)\}`)

// template fills text's {name} variables: each from what the user set, else
// the variable's value or default; a required one unset is refused.
// Identifiers nobody declares or set stay as written, as the schema says.
// shown is the text with each secret variable as "***".
func (r *resolver) template(text string, vars map[string]Input) (out, shown string, err error) {
	var b, sb strings.Builder
	last := 0
	for _, m := range variable.FindAllStringSubmatchIndex(text, -1) {
		b.WriteString(text[last:m[0]])
		sb.WriteString(text[last:m[0]])
		last = m[1]
		name := text[m[2]:m[3]]
		in, declared := vars[name]
		if !declared {
			v, ok := r.set(name)
			if !ok {
				v = text[m[0]:m[1]]
			}
			b.WriteString(v)
			sb.WriteString(v)
			continue
		}
		v, vShown, _, err := r.value("variable", name, []string{name}, in, nil)
		if err != nil {
			return "", "", err
		}
		b.WriteString(v)
		sb.WriteString(vShown)
	}
	b.WriteString(text[last:])
	sb.WriteString(text[last:])
	return b.String(), sb.String(), nil
}

// keyValues resolves headers or environment variables to a map, and each
// as shown ("NAME<sep>value", secrets masked).
func (r *resolver) keyValues(kind, sep string, list []KeyValue) (map[string]string, []string, error) {
	out := map[string]string{}
	var shown []string
	for _, kv := range list {
		v, vShown, ok, err := r.value(kind, kv.Name, []string{kv.Name}, kv.Input, kv.Variables)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			out[kv.Name] = v
			shown = append(shown, kv.Name+sep+vShown)
		}
	}
	return out, shown, nil
}

// args resolves arguments to argv, and argv as shown (secrets masked).
func (r *resolver) args(list []Argument) (argv, shown []string, err error) {
	for _, a := range list {
		switch a.Type {
		case "positional":
			label := a.ValueHint
			if label == "" {
				label = a.Value
			}
			v, vShown, ok, err := r.value("argument", label, []string{a.ValueHint}, a.Input, a.Variables)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				argv, shown = append(argv, v), append(shown, vShown)
			}
		case "named":
			if a.Name == "" {
				return nil, nil, fmt.Errorf("a named argument has no name")
			}
			v, vShown, ok, err := r.value("argument", a.Name, []string{a.Name, strings.TrimLeft(a.Name, "-"), a.ValueHint}, a.Input, a.Variables)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case !ok && a.Value == "" && a.Default == "" && !a.IsRequired && a.Format != "boolean" && a.Description == "":
				// A bare flag: written as it is.
				argv, shown = append(argv, a.Name), append(shown, a.Name)
			case !ok, a.Format == "boolean" && v == "false":
			case a.Format == "boolean" && v == "true":
				argv, shown = append(argv, a.Name), append(shown, a.Name)
			default:
				argv, shown = append(argv, a.Name, v), append(shown, a.Name, vShown)
			}
		default:
			return nil, nil, fmt.Errorf("argument type %q is neither positional nor named", a.Type)
		}
	}
	return argv, shown, nil
}
