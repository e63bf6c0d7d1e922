package advertisement

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
	"github.com/switchboard-run/switchboard/kit/lib/rawjson"
)

// FromManifest applies opts to the tools a plugin manifest lists, with the
// same rules as an MCP server's listing: the manifest may be a third
// party's, so its annotations too pass only when the backend is trusted.
func FromManifest(tools []*registryv1.Tool, opts Options) *Set {
	return build(tools, (*registryv1.Tool).GetName,
		func(t *registryv1.Tool) (*registryv1.Tool, error) { return fromManifest(t, opts.Trust) }, opts)
}

func fromManifest(t *registryv1.Tool, trust bool) (*registryv1.Tool, error) {
	if err := CheckSchema("input schema", t.GetInputSchema()); err != nil {
		return nil, fmt.Errorf("its %v", err)
	}
	out := &registryv1.Tool{Name: t.GetName(), Description: cut(t.GetDescription(), MaxDescription),
		InputSchema: t.GetInputSchema(), Title: t.Title}
	if t.OutputSchema != nil {
		if err := CheckSchema("output schema", t.GetOutputSchema()); err != nil {
			return nil, fmt.Errorf("its %v", err)
		}
		out.OutputSchema = proto.String(t.GetOutputSchema())
	}
	if trust && t.Annotations != nil {
		if err := rawjson.CheckObject("annotations", t.GetAnnotations()); err != nil {
			return nil, fmt.Errorf("its %v", err)
		}
		out.Annotations = proto.String(t.GetAnnotations())
	}
	return out, nil
}

// CheckSchema refuses schema text that is not a JSON object that compiles,
// as the registry would. what names it in the sentence ("input schema").
func CheckSchema(what, text string) error {
	if err := rawjson.CheckObject(what, text); err != nil {
		return err
	}
	if err := compiles([]byte(text)); err != nil {
		return fmt.Errorf("%s does not compile: %v", what, err)
	}
	return nil
}
