module github.com/volleylock/volley

go 1.25.0

require (
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/redcon v1.6.2
)

require (
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
