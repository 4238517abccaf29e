module github.com/example/{{function}}

go 1.24

require github.com/spinframework/spin-go-sdk/v2 v2.0.0

require (
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	go.bytecodealliance.org/cm v0.2.2 // indirect
)
