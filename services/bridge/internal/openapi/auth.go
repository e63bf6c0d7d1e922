package openapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
	"golang.org/x/net/http/httpguts"

	bridgev1 "github.com/switchboard-run/switchboard/gen/go/switchboard/bridge/v1"
	"github.com/switchboard-run/switchboard/kit/lib/listen"
	"github.com/switchboard-run/switchboard/services/bridge/internal/pinned"
)

// credentials turns the mount's auth into what every request to the API's
// origin carries, taking an API key's name and place from the document's
// one apiKey scheme when the mount does not say. Credentials over plain
// http are refused unless the API is on loopback (docs/security.md).
func credentials(doc *openapi3.T, a *bridgev1.OpenApiAuth, base *url.URL) (pinned.Credentials, reserved, error) {
	c := pinned.Credentials{Headers: map[string]string{}, Query: map[string]string{}}
	res := reserved{headers: map[string]bool{}, query: map[string]bool{}}
	if a == nil {
		return c, res, nil
	}
	basic := a.GetBasic()
	switch {
	case a.GetBearerToken() != "" && basic != nil:
		return c, res, errors.New("auth gives both a bearer token and basic credentials, which would both be the Authorization header: give one")
	case a.GetBearerToken() != "":
		c.Headers["Authorization"] = "Bearer " + a.GetBearerToken()
	case basic != nil:
		if basic.GetUsername() == "" {
			return c, res, errors.New("basic auth has no username")
		}
		c.Headers["Authorization"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(basic.GetUsername()+":"+basic.GetPassword()))
	}
	if k := a.GetApiKey(); k != nil {
		name, in, err := apiKeyPlace(doc, k)
		if err != nil {
			return c, res, err
		}
		if in == bridgev1.ApiKeyLocation_API_KEY_LOCATION_HEADER {
			if !httpguts.ValidHeaderFieldName(name) {
				return c, res, fmt.Errorf("API key header %q is not a valid HTTP header name", name)
			}
			if _, taken := c.Headers[http.CanonicalHeaderKey(name)]; taken {
				return c, res, fmt.Errorf("API key header %q is the Authorization header the other credentials use", name)
			}
			c.Headers[http.CanonicalHeaderKey(name)] = k.GetValue()
		} else {
			c.Query[name] = k.GetValue()
		}
	}
	for _, v := range c.Headers {
		if !httpguts.ValidHeaderFieldValue(v) {
			return c, res, errors.New("a credential holds a character an HTTP header cannot carry")
		}
	}
	if base.Scheme == "http" && !listen.IsLoopbackHost(base.Hostname()) && (len(c.Headers) > 0 || len(c.Query) > 0) {
		return c, res, fmt.Errorf("base URL %q is plain http, so the API's credentials would cross the network in the clear: use https://, or a loopback host", base.Redacted())
	}
	for h := range c.Headers {
		res.headers[h] = true
	}
	for q := range c.Query {
		res.query[q] = true
	}
	return c, res, nil
}

// apiKeyPlace is where an API key goes: as the mount says, else as the
// document's one apiKey security scheme says.
func apiKeyPlace(doc *openapi3.T, k *bridgev1.ApiKey) (string, bridgev1.ApiKeyLocation, error) {
	if k.GetValue() == "" {
		return "", 0, errors.New("the API key is empty")
	}
	name, in := k.GetName(), k.GetIn()
	if name != "" && in != bridgev1.ApiKeyLocation_API_KEY_LOCATION_UNSPECIFIED {
		return name, in, nil
	}
	var schemes []*openapi3.SecurityScheme
	var names []string
	if doc.Components != nil {
		for _, n := range slices.Sorted(maps.Keys(doc.Components.SecuritySchemes)) {
			if s := doc.Components.SecuritySchemes[n]; s != nil && s.Value != nil && s.Value.Type == "apiKey" {
				schemes, names = append(schemes, s.Value), append(names, n)
			}
		}
	}
	if len(schemes) != 1 {
		return "", 0, fmt.Errorf("the document has %d apiKey security schemes (%v), so the API key's name and place must be given (--api-key-name, --api-key-in)", len(schemes), names)
	}
	s := schemes[0]
	if name == "" {
		name = s.Name
	}
	if in == bridgev1.ApiKeyLocation_API_KEY_LOCATION_UNSPECIFIED {
		switch s.In {
		case "header":
			in = bridgev1.ApiKeyLocation_API_KEY_LOCATION_HEADER
		case "query":
			in = bridgev1.ApiKeyLocation_API_KEY_LOCATION_QUERY
		default:
			return "", 0, fmt.Errorf("security scheme %q takes its API key in a %s, which is not supported: header and query are", names[0], s.In)
		}
	}
	return name, in, nil
}
