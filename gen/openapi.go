// Package gen holds the code and documents generated from proto/ by
// `make generate`. Everything under go/ and openapi/ is generated and
// committed; this file is the one hand-written piece, so the gateway can
// serve the OpenAPI document without reading files at run time.
package gen

import _ "embed"

// OpenAPI is the OpenAPI v2 document protoc-gen-openapiv2 wrote for the REST
// routes of every service (proto/http_routes.yaml).
//
//go:embed openapi/switchboard.swagger.json
var OpenAPI []byte
