package ghsim

import "syscall"

var sigTERM = syscall.SIGTERM
