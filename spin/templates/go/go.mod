module example.com/{{function}}

go 1.24
