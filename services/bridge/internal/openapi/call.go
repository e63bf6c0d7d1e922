package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	mailboxv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/mailbox/v1"
	"github.com/switchboard-run/switchboard/kit/suite/capture"
	"github.com/switchboard-run/switchboard/services/bridge/internal/pinned"
)

// DefaultMaxChars caps a capture's stdout and stderr each when the mount
// sets no cap, as for MCP servers.
const DefaultMaxChars = 100_000

// Client is the API's HTTP client: its credentials pinned to the base
// URL's origin, redirects elsewhere refused.
func (a *API) Client() *http.Client { return pinned.Client(a.Base, a.creds, "this API") }

// Has says whether name is one of the API's tools.
func (a *API) Has(name string) bool { return a.ops[name] != nil }

// Call makes the HTTP request of tool name with input (a JSON object as
// text) and maps the response: a 2xx status is its body on stdout and exit
// code 0; any other is exit code 1 with the status and the body on stderr.
// limit caps stdout and stderr each in characters (<= 0: DefaultMaxChars);
// the body is read to at most four bytes a character. ctx bounds the whole
// exchange.
func (a *API) Call(ctx context.Context, client *http.Client, name, input string, limit int) *mailboxv1.Capture {
	if limit <= 0 {
		limit = DefaultMaxChars
	}
	t := a.ops[name]
	if t == nil {
		return capture.Failed(capture.ExitNotFound, "the API has no operation %q", name)
	}
	req, err := a.request(ctx, t, input)
	if err != nil {
		return capture.Failed(capture.ExitError, "%s was not called: %v", t.op.label(), err)
	}
	res, err := client.Do(req)
	if err != nil {
		return capture.Failed(capture.ExitError, "%s %s failed: %v", t.op.method, req.URL.Redacted(), unwrapURLError(err))
	}
	defer res.Body.Close()
	body, err := readBounded(res.Body, limit)
	if err != nil && ctx.Err() == nil {
		return capture.Failed(capture.ExitError, "%s %s answered %s, and reading its body failed: %v", t.op.method, req.URL.Redacted(), res.Status, err)
	}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		return capture.New(body, "", 0)
	}
	head := fmt.Sprintf("%s %s answered %s", t.op.method, req.URL.Redacted(), res.Status)
	if body != "" {
		head += "\n" + body
	}
	return capture.New("", capture.Cap(head, limit), capture.ExitError)
}

// readBounded reads at most four bytes a character of limit, as text: a
// body cut short ends with a marker saying so.
func readBounded(r io.Reader, limit int) (string, error) {
	maxBytes := int64(limit) * utf8.UTFMax
	data, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	cut := int64(len(data)) > maxBytes
	if cut {
		data = data[:maxBytes]
	}
	text := capture.Text(data)
	if cut || utf8.RuneCountInString(text) > limit {
		text = firstRunes(text, limit) + fmt.Sprintf("\n[truncated: the response body is longer than %d characters; the rest was not read]", limit)
	}
	return text, err
}

// firstRunes is s's first n characters.
func firstRunes(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}

// request builds the operation's HTTP request from the tool's input.
func (a *API) request(ctx context.Context, t *tool, input string) (*http.Request, error) {
	var args map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("its input is not JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("its input is not a JSON object")
	}
	if err := t.check.Validate(v); err != nil {
		return nil, fmt.Errorf("its input does not match the tool's input schema: %v", oneLine(err))
	}
	if err := json.Unmarshal([]byte(input), &args); err != nil {
		return nil, fmt.Errorf("its input is not a JSON object: %v", err)
	}
	path := t.op.path
	query := url.Values{}
	header := http.Header{}
	for _, p := range t.op.params {
		raw, ok := args[p.name]
		if !ok || string(raw) == "null" {
			continue
		}
		values, err := scalars(p.name, raw)
		if err != nil {
			return nil, err
		}
		switch p.in {
		case "path":
			for i, s := range values {
				if s == "." || s == ".." || s == "" {
					return nil, fmt.Errorf("path parameter %q is %q, which would change the path rather than name something in it", p.name, s)
				}
				values[i] = url.PathEscape(s)
			}
			path = strings.ReplaceAll(path, "{"+p.name+"}", strings.Join(values, ","))
		case "query":
			switch {
			case p.explode:
				query[p.name] = append(query[p.name], values...)
			case p.style == "spaceDelimited":
				query.Add(p.name, strings.Join(values, " "))
			case p.style == "pipeDelimited":
				query.Add(p.name, strings.Join(values, "|"))
			default:
				query.Add(p.name, strings.Join(values, ","))
			}
		case "header":
			v := strings.Join(values, ",")
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("header parameter %q holds a character an HTTP header cannot carry", p.name)
			}
			header.Set(p.name, v)
		}
	}
	u, err := url.Parse(a.Base.String() + path)
	if err != nil {
		return nil, fmt.Errorf("its URL does not parse: %v", err)
	}
	u.RawQuery = query.Encode()
	var body io.Reader
	if raw, ok := args[bodyKey]; ok && t.op.bodyType != "" {
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return nil, fmt.Errorf("its body is not JSON: %v", err)
		}
		body = bytes.NewReader(compact.Bytes())
	}
	req, err := http.NewRequestWithContext(ctx, t.op.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", t.op.bodyType)
	}
	if t.op.accept != "" {
		req.Header.Set("Accept", t.op.accept)
	}
	req.Header.Set("User-Agent", "switchboard-bridge")
	return req, nil
}

// scalars is a parameter's value as the strings it is sent as: a string,
// number or boolean is one; an array is one per item.
func scalars(name string, raw json.RawMessage) ([]string, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parameter %q is not JSON: %v", name, err)
	}
	one := func(x any) (string, error) {
		switch s := x.(type) {
		case string:
			return s, nil
		case json.Number:
			return s.String(), nil
		case bool:
			if s {
				return "true", nil
			}
			return "false", nil
		}
		return "", fmt.Errorf("parameter %q holds %s; a path, query or header takes strings, numbers and booleans, or an array of them", name, kind(x))
	}
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, x := range list {
			s, err := one(x)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := one(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func kind(x any) string {
	switch x.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array inside an array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", x)
}

// unwrapURLError drops the *url.Error's repetition of the method and URL,
// which the sentence already names.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
