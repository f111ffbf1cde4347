#!/bin/sh
[ $((2 * 3)) -eq 6 ] && echo "mul: ok"
