module github.com/switchboard-run/switchboard/services/mailbox

go 1.26.0
