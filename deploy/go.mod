module github.com/switchboard-run/switchboard/deploy

go 1.26.0

require (
	github.com/compose-spec/compose-go/v2 v2.16.2
	github.com/mattn/go-shellwords v1.0.12
)
