/**
 * Where each lane sits: its rows, top and height. The canvas is one column of
 * lane labels on the left and the time track on the right, below an axis.
 */
import { ILane } from './payload';

export const AXIS_H = 22;
export const ROW_H = 16;
export const STEPS_H = 18;
export const COUNTER_H = 44;
export const LANE_GAP = 4;
export const LABEL_W = 150;

export interface ILaneBox {
  /** Position of the lane in the payload's `lanes`. */
  index: number;
  lane: ILane;
  top: number;
  height: number;
  rows: number;
  rowH: number;
}

export interface ILayout {
  boxes: ILaneBox[];
  height: number;
}

/** Lanes top to bottom in the payload's order; a lane of nested events gets a row per depth. */
export function layoutLanes(lanes: ILane[]): ILayout {
  const boxes: ILaneBox[] = [];
  let top = AXIS_H;
  lanes.forEach((lane, index) => {
    const rows = Math.max(1, Math.floor(lane.rows) || 1);
    let height: number;
    let rowH: number;
    if (lane.kind === 'memory') {
      height = COUNTER_H;
      rowH = COUNTER_H;
    } else if (lane.kind === 'steps') {
      height = STEPS_H * rows;
      rowH = STEPS_H;
    } else {
      height = ROW_H * rows;
      rowH = ROW_H;
    }
    boxes.push({ index, lane, top, height, rows, rowH });
    top += height + LANE_GAP;
  });
  return { boxes, height: top };
}

/** The lane box and row under y, or null between lanes. */
export function rowAt(layout: ILayout, y: number): { box: ILaneBox; row: number } | null {
  for (const box of layout.boxes) {
    if (y >= box.top && y < box.top + box.height) {
      return { box, row: Math.floor((y - box.top) / box.rowH) };
    }
  }
  return null;
}
