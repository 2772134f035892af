module cprof.test/cgocall

go 1.19
