module cprof.test

go 1.19
