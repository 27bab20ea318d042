import { Injectable } from '@nestjs/common';
import type { Clock } from '../core/ports';

/** The real clock; tests replace the CLOCK provider with a fake one. */
@Injectable()
export class SystemClock implements Clock {
  now(): number {
    return Date.now();
  }
}

export const CLOCK = Symbol('CLOCK');
