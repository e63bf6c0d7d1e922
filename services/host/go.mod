module github.com/switchboard-run/switchboard/services/host

go 1.26.0
