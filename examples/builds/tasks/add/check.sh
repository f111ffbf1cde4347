#!/bin/sh
[ $((2 + 3)) -eq 5 ] && echo "add: ok"
