module cprof.bench/gowork

go 1.19
