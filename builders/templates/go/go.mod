module github.com/example/{{function}}

go 1.24

require github.com/spinframework/spin-go-sdk/v2 v2.2.1
