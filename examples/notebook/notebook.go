package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// notebook is the backend's state: keys and their values, in memory only,
// so a restarted backend starts with an empty notebook.
type notebook struct {
	notes map[string]string
}

func newNotebook() *notebook { return &notebook{notes: map[string]string{}} }

// keyArgs are the arguments of get and delete.
type keyArgs struct {
	Key *string `json:"key"`
}

// putArgs are the arguments of put.
type putArgs struct {
	Key   *string `json:"key"`
	Value *string `json:"value"`
}

// call runs one tool. The result is what the reply carries; an error is
// the reply's error, a sentence for the model.
func (n *notebook) call(tool string, args json.RawMessage) (any, error) {
	switch tool {
	case "put":
		var a putArgs
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		if err := needKey(a.Key); err != nil {
			return nil, err
		}
		if a.Value == nil {
			return nil, errors.New(`put needs a "value" string`)
		}
		_, had := n.notes[*a.Key]
		n.notes[*a.Key] = *a.Value
		if had {
			return fmt.Sprintf("replaced %q", *a.Key), nil
		}
		return fmt.Sprintf("stored %q", *a.Key), nil
	case "get", "delete":
		var a keyArgs
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		if err := needKey(a.Key); err != nil {
			return nil, err
		}
		v, ok := n.notes[*a.Key]
		if !ok {
			return nil, fmt.Errorf("no note %q in the notebook; list shows the keys it holds", *a.Key)
		}
		if tool == "get" {
			return v, nil
		}
		delete(n.notes, *a.Key)
		return fmt.Sprintf("deleted %q", *a.Key), nil
	case "list":
		keys := make([]string, 0, len(n.notes))
		for k := range n.notes {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys, nil
	}
	return nil, fmt.Errorf("the notebook has no tool %q: it has put, get, list and delete", tool)
}

// decode reads a tool's arguments object, refusing unknown fields.
func decode(args json.RawMessage, into any) error {
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("the arguments are not what the tool takes: %v", err)
	}
	return nil
}

func needKey(key *string) error {
	if key == nil || *key == "" {
		return errors.New(`a "key" string is needed`)
	}
	return nil
}
