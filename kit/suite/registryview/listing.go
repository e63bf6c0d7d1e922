package registryview

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	registryv1 "github.com/switchboard-run/switchboard/gen/go/switchboard/registry/v1"
)

// PageSize is the page size a listing asks for: the registry's maximum
// (docs/design.md §3), so a large workspace takes few round trips; the
// registry also ends a page at 4 MiB.
const PageSize = 1000

// The registry's paged listings are read to their end, page by page, so a
// workspace of any size comes in messages that each fit the suite's limit.

// Lister is the part of the registry's client a listing reads.
type Lister interface {
	ListClients(ctx context.Context, in *registryv1.ListClientsRequest, opts ...grpc.CallOption) (*registryv1.ListClientsResponse, error)
	ListTools(ctx context.Context, in *registryv1.ListToolsRequest, opts ...grpc.CallOption) (*registryv1.ListToolsResponse, error)
}

// Clients reads every row of the clients of workspace, sorted by client.
// A refusal of any page (an unknown workspace) is returned as it came.
func Clients(ctx context.Context, reg Lister, workspace string) ([]*registryv1.ClientRow, error) {
	var rows []*registryv1.ClientRow
	err := pages(func(token string) (string, error) {
		res, err := reg.ListClients(ctx, &registryv1.ListClientsRequest{Workspace: workspace, PageSize: PageSize, PageToken: token})
		rows = append(rows, res.GetRows()...)
		return res.GetNextPageToken(), err
	})
	return rows, err
}

// Tools reads every tool of workspace, sorted by presented name.
func Tools(ctx context.Context, reg Lister, workspace string) ([]*registryv1.PresentedTool, error) {
	var tools []*registryv1.PresentedTool
	err := pages(func(token string) (string, error) {
		res, err := reg.ListTools(ctx, &registryv1.ListToolsRequest{Workspace: workspace, PageSize: PageSize, PageToken: token})
		tools = append(tools, res.GetTools()...)
		return res.GetNextPageToken(), err
	})
	return tools, err
}

// pages calls page with each page's token, the first empty, until a page
// names no next one.
func pages(page func(token string) (next string, err error)) error {
	token := ""
	for {
		next, err := page(token)
		switch {
		case err != nil:
			return err
		case next == "":
			return nil
		case next == token:
			return fmt.Errorf("the registry gave the page token it was sent back as the next one; the listing would never end")
		}
		token = next
	}
}
