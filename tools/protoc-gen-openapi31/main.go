// Command protoc-gen-openapi31 writes the suite's REST API as one OpenAPI
// 3.1 document (gen/openapi/switchboard.openapi.json), as a buf plugin run
// offline. The routes come from proto/http_routes.yaml (the
// grpc_api_configuration grpc-gateway reads), applied to the methods as
// google.api.http options so that gnostic's protoc-gen-openapi generator
// (github.com/google/gnostic) can describe them; its OpenAPI 3.0 output is
// then made 3.1 and merged with the routes the gateway serves by hand
// (handwritten=…, an OpenAPI 3.1 fragment). docs/architecture.md has the
// pipeline.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/gnostic/cmd/protoc-gen-openapi/generator"
	"go.yaml.in/yaml/v3"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// output is the document's name under the plugin's out directory.
const output = "switchboard.openapi.json"

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "protoc-gen-openapi31:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	req := &pluginpb.CodeGeneratorRequest{}
	if err := proto.Unmarshal(data, req); err != nil {
		return fmt.Errorf("reading the request: %w", err)
	}
	params := map[string]string{}
	for _, p := range strings.Split(req.GetParameter(), ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			params[k] = v
		}
	}
	for _, k := range []string{"grpc_api_configuration", "handwritten"} {
		if params[k] == "" {
			return fmt.Errorf("the option %s=FILE is missing", k)
		}
	}
	if err := applyRules(req, params["grpc_api_configuration"]); err != nil {
		return err
	}
	generated, err := gnostic(req)
	if err != nil {
		return err
	}
	doc, err := finish(generated, params["handwritten"])
	if err != nil {
		return err
	}
	res := &pluginpb.CodeGeneratorResponse{
		SupportedFeatures: proto.Uint64(uint64(pluginpb.CodeGeneratorResponse_FEATURE_PROTO3_OPTIONAL)),
		File:              []*pluginpb.CodeGeneratorResponse_File{{Name: proto.String(output), Content: proto.String(doc)}},
	}
	b, err := proto.Marshal(res)
	if err != nil {
		return err
	}
	_, err = out.Write(b)
	return err
}

// rules is the part of a google.api.Service YAML this plugin reads.
type rules struct {
	HTTP struct {
		Rules []struct {
			Selector string `yaml:"selector"`
			Get      string `yaml:"get"`
			Put      string `yaml:"put"`
			Post     string `yaml:"post"`
			Delete   string `yaml:"delete"`
			Patch    string `yaml:"patch"`
			Body     string `yaml:"body"`
		} `yaml:"rules"`
	} `yaml:"http"`
}

// applyRules sets each rule of the routes file as its method's
// google.api.http option in the request's descriptors. A rule naming no
// method is refused: it would describe nothing.
func applyRules(req *pluginpb.CodeGeneratorRequest, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rs rules
	if err := yaml.Unmarshal(data, &rs); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	methods := map[string]*descriptorpb.MethodDescriptorProto{}
	for _, f := range req.GetProtoFile() {
		for _, s := range f.GetService() {
			for _, m := range s.GetMethod() {
				methods[f.GetPackage()+"."+s.GetName()+"."+m.GetName()] = m
			}
		}
	}
	for _, r := range rs.HTTP.Rules {
		m := methods[r.Selector]
		if m == nil {
			return fmt.Errorf("%s: selector %q names no method of the protos", path, r.Selector)
		}
		rule := &annotations.HttpRule{Body: r.Body}
		switch {
		case r.Get != "":
			rule.Pattern = &annotations.HttpRule_Get{Get: r.Get}
		case r.Put != "":
			rule.Pattern = &annotations.HttpRule_Put{Put: r.Put}
		case r.Post != "":
			rule.Pattern = &annotations.HttpRule_Post{Post: r.Post}
		case r.Delete != "":
			rule.Pattern = &annotations.HttpRule_Delete{Delete: r.Delete}
		case r.Patch != "":
			rule.Pattern = &annotations.HttpRule_Patch{Patch: r.Patch}
		default:
			return fmt.Errorf("%s: rule %q names no method and path", path, r.Selector)
		}
		if m.Options == nil {
			m.Options = &descriptorpb.MethodOptions{}
		}
		proto.SetExtension(m.Options, annotations.E_Http, rule)
	}
	return nil
}

// gnostic runs gnostic's generator on the request and returns its YAML.
func gnostic(req *pluginpb.CodeGeneratorRequest) ([]byte, error) {
	req = proto.CloneOf(req)
	req.Parameter = nil
	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, err
	}
	str := func(s string) *string { return &s }
	no, depth := false, 2
	conf := generator.Configuration{
		Version: str("v1"), Title: str("Switchboard"), Description: str(""),
		Naming: str("proto"), FQSchemaNaming: &no, EnumType: str("string"),
		CircularDepth: &depth, DefaultResponse: &no, OutputMode: str("merged"),
	}
	f := plugin.NewGeneratedFile("openapi.yaml", "")
	if err := generator.NewOpenAPIv3Generator(plugin, conf, plugin.Files).Run(f); err != nil {
		return nil, err
	}
	b, err := f.Content()
	return bytes.Clone(b), err
}
